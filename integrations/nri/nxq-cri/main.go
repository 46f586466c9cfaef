// SPDX-License-Identifier: GPL-2.0
//
// nxq-cri: a CRI client for the tests, driving containerd's CRI plugin as
// a kubelet would (k8s.io/cri-api runtime v1 over gRPC on containerd's
// socket).  One call a command; a pod's sandbox configuration is kept in
// DIR/<pod id>.json because CreateContainer needs it again.
//
//	nxq-cri runp NAME UID CGROUP-PARENT [k=v annotation]...     -> pod id
//	nxq-cri create POD NAME IMAGE [-a k=v]... [-e K=V]... [-m HOST:CTR[:ro]]...
//		[-d /dev/NODE]... -- ARGS...                            -> id
//	nxq-cri start ID | stop ID | rm ID | stopp POD | rmp POD
//	nxq-cri exec ID ARGS...        (ExecSync: its stdout, stderr, exit code)
//	nxq-cri state ID               (CONTAINER_RUNNING, ..._EXITED, ...)
//
// Pods use the host's network (NamespaceMode NODE): no CNI.
// Environment: NXQ_CRI_SOCK (default /run/containerd/containerd.sock),
// NXQ_CRI_DIR (default /run/nxq-cri).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	rt "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "nxq-cri: "+format+"\n", args...)
	os.Exit(1)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func kv(s string) (string, string) {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		die("not KEY=VALUE: %q", s)
	}
	return s[:i], s[i+1:]
}

func main() {
	if len(os.Args) < 2 {
		die("usage: nxq-cri runp|create|start|stop|rm|stopp|rmp|exec|state ...")
	}
	sock := env("NXQ_CRI_SOCK", "/run/containerd/containerd.sock")
	dir := env("NXQ_CRI_DIR", "/run/nxq-cri")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, "unix://"+sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithBlock())
	if err != nil {
		die("cannot reach %s: %v", sock, err)
	}
	defer conn.Close()
	c := rt.NewRuntimeServiceClient(conn)
	a := os.Args[2:]
	need := func(n int) {
		if len(a) < n {
			die("%s: missing arguments", os.Args[1])
		}
	}

	switch os.Args[1] {
	case "runp":
		need(3)
		cfg := &rt.PodSandboxConfig{
			Metadata:     &rt.PodSandboxMetadata{Name: a[0], Uid: a[1], Namespace: "default"},
			LogDirectory: filepath.Join(dir, "logs", a[1]),
			Annotations:  map[string]string{},
			Linux: &rt.LinuxPodSandboxConfig{
				CgroupParent: a[2],
				SecurityContext: &rt.LinuxSandboxSecurityContext{
					NamespaceOptions: &rt.NamespaceOption{Network: rt.NamespaceMode_NODE},
				},
			},
		}
		for _, s := range a[3:] {
			k, v := kv(s)
			cfg.Annotations[k] = v
		}
		if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
			die("%v", err)
		}
		r, err := c.RunPodSandbox(ctx, &rt.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			die("RunPodSandbox: %v", err)
		}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, r.PodSandboxId+".json"), b, 0o644); err != nil {
			die("%v", err)
		}
		fmt.Println(r.PodSandboxId)
	case "create":
		need(3)
		b, err := os.ReadFile(filepath.Join(dir, a[0]+".json"))
		if err != nil {
			die("pod %s: %v", a[0], err)
		}
		pcfg := &rt.PodSandboxConfig{}
		if err := json.Unmarshal(b, pcfg); err != nil {
			die("pod %s: %v", a[0], err)
		}
		cfg := &rt.ContainerConfig{
			Metadata:    &rt.ContainerMetadata{Name: a[1]},
			Image:       &rt.ImageSpec{Image: a[2]},
			LogPath:     a[1] + ".log",
			Annotations: map[string]string{},
			Linux:       &rt.LinuxContainerConfig{},
		}
		i := 3
		for ; i < len(a) && a[i] != "--"; i++ {
			switch {
			case a[i] == "-a" && i+1 < len(a):
				k, v := kv(a[i+1])
				cfg.Annotations[k] = v
				i++
			case a[i] == "-e" && i+1 < len(a):
				k, v := kv(a[i+1])
				cfg.Envs = append(cfg.Envs, &rt.KeyValue{Key: k, Value: v})
				i++
			case a[i] == "-m" && i+1 < len(a): // host:container[:ro]
				p := strings.Split(a[i+1], ":")
				m := &rt.Mount{HostPath: p[0], ContainerPath: p[1]}
				m.Readonly = len(p) > 2 && p[2] == "ro"
				cfg.Mounts = append(cfg.Mounts, m)
				i++
			case a[i] == "-d" && i+1 < len(a): // a host device node
				cfg.Devices = append(cfg.Devices, &rt.Device{HostPath: a[i+1],
					ContainerPath: a[i+1], Permissions: "rw"})
				i++
			default:
				die("create: unknown option %q", a[i])
			}
		}
		if i < len(a) {
			cfg.Command = a[i+1:]
		}
		r, err := c.CreateContainer(ctx, &rt.CreateContainerRequest{PodSandboxId: a[0],
			Config: cfg, SandboxConfig: pcfg})
		if err != nil {
			die("CreateContainer: %v", err)
		}
		fmt.Println(r.ContainerId)
	case "start":
		need(1)
		if _, err := c.StartContainer(ctx, &rt.StartContainerRequest{ContainerId: a[0]}); err != nil {
			die("StartContainer: %v", err)
		}
	case "stop":
		need(1)
		if _, err := c.StopContainer(ctx, &rt.StopContainerRequest{ContainerId: a[0], Timeout: 5}); err != nil {
			die("StopContainer: %v", err)
		}
	case "rm":
		need(1)
		if _, err := c.RemoveContainer(ctx, &rt.RemoveContainerRequest{ContainerId: a[0]}); err != nil {
			die("RemoveContainer: %v", err)
		}
	case "stopp":
		need(1)
		if _, err := c.StopPodSandbox(ctx, &rt.StopPodSandboxRequest{PodSandboxId: a[0]}); err != nil {
			die("StopPodSandbox: %v", err)
		}
	case "rmp":
		need(1)
		if _, err := c.RemovePodSandbox(ctx, &rt.RemovePodSandboxRequest{PodSandboxId: a[0]}); err != nil {
			die("RemovePodSandbox: %v", err)
		}
		os.Remove(filepath.Join(dir, a[0]+".json"))
	case "exec":
		need(2)
		r, err := c.ExecSync(ctx, &rt.ExecSyncRequest{ContainerId: a[0], Cmd: a[1:], Timeout: 60})
		if err != nil {
			die("ExecSync: %v", err)
		}
		os.Stdout.Write(r.Stdout)
		os.Stderr.Write(r.Stderr)
		os.Exit(int(r.ExitCode))
	case "state":
		need(1)
		r, err := c.ContainerStatus(ctx, &rt.ContainerStatusRequest{ContainerId: a[0]})
		if err != nil {
			die("ContainerStatus: %v", err)
		}
		fmt.Println(r.Status.State.String())
	default:
		die("unknown command %q", os.Args[1])
	}
}
