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
//	nxq-cri cycles N NAME PARENT IMAGE [-check-every K -check CMD]
//		[-raw FILE] [create's options] -- ARGS...  (N pods, timed)
//
// cycles makes N pods one after the other, as a kubelet would start and
// end each: RunPodSandbox (pod NAME-<i> of a random uid, cgroup parent
// PARENT/pod<uid>), CreateContainer and StartContainer of one container
// (IMAGE, ARGS, create's -a/-e/-m/-d), StopContainer (timeout 0),
// RemoveContainer, StopPodSandbox, RemovePodSandbox, then the pod's
// cgroup removed as kubelet does.  Every K-th cycle (from the first) it
// runs CMD (sh -c) with NXQ_CYC_POD, NXQ_CYC_CTR and NXQ_CYC_CG (the
// container's cgroup, as /proc/<pid>/cgroup names it) set while the
// container runs; a CMD that fails ends the run.  It prints, per phase,
// "phase NAME: n N median M ms p99 P ms max X ms" (RPC round trips as
// the client sees them; "start" is CreateContainer + StartContainer, a
// kubelet's container start), and the first error, if any, as an exit 1;
// with -raw, it appends each measurement to FILE as "PHASE MS" lines.
//
// Pods use the host's network (NamespaceMode NODE): no CNI.
// Environment: NXQ_CRI_SOCK (default /run/containerd/containerd.sock),
// NXQ_CRI_DIR (default /run/nxq-cri).
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
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

// ctrConfig: a container NAME of IMAGE, with create's options and ARGS
// (after "--") in opts.
func ctrConfig(name, image string, opts []string) *rt.ContainerConfig {
	cfg := &rt.ContainerConfig{
		Metadata:    &rt.ContainerMetadata{Name: name},
		Image:       &rt.ImageSpec{Image: image},
		LogPath:     name + ".log",
		Annotations: map[string]string{},
		Linux:       &rt.LinuxContainerConfig{},
	}
	a := opts
	i := 0
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
	return cfg
}

// podConfig: a pod NAME of UID under cgroup PARENT, on the host's network.
func podConfig(dir, name, uid, parent string, ann []string) *rt.PodSandboxConfig {
	cfg := &rt.PodSandboxConfig{
		Metadata:     &rt.PodSandboxMetadata{Name: name, Uid: uid, Namespace: "default"},
		LogDirectory: filepath.Join(dir, "logs", uid),
		Annotations:  map[string]string{},
		Linux: &rt.LinuxPodSandboxConfig{
			CgroupParent: parent,
			SecurityContext: &rt.LinuxSandboxSecurityContext{
				NamespaceOptions: &rt.NamespaceOption{Network: rt.NamespaceMode_NODE},
			},
		},
	}
	for _, s := range ann {
		k, v := kv(s)
		cfg.Annotations[k] = v
	}
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		die("%v", err)
	}
	return cfg
}

// initCgroup: the cgroup (as /proc/PID/cgroup names it) of a container's init.
func initCgroup(c rt.RuntimeServiceClient, ctx context.Context, id string) (string, error) {
	r, err := c.ContainerStatus(ctx, &rt.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return "", err
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(r.Info["info"]), &info); err != nil || info.Pid <= 0 {
		return "", fmt.Errorf("no pid in ContainerStatus's info: %v", err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", info.Pid))
	if err != nil {
		return "", err
	}
	l := strings.TrimSpace(string(b))
	if !strings.HasPrefix(l, "0::") {
		return "", fmt.Errorf("/proc/%d/cgroup: %q is not cgroup v2's", info.Pid, l)
	}
	return l[3:], nil
}

// podUID: a random UUID, as a pod's uid is (kubelet's: the API server's).
func podUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		die("%v", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// cycles: see the top of this file.
func cycles(c rt.RuntimeServiceClient, dir string, a []string) {
	n, err := strconv.Atoi(a[0])
	if err != nil || n <= 0 {
		die("cycles: not a count: %q", a[0])
	}
	name, parent, image := a[1], a[2], a[3]
	every, check, raw := 0, "", ""
	opts := a[4:]
	for len(opts) >= 2 && (opts[0] == "-check-every" || opts[0] == "-check" || opts[0] == "-raw") {
		if opts[0] == "-check" {
			check = opts[1]
		} else if opts[0] == "-raw" {
			raw = opts[1]
		} else if every, err = strconv.Atoi(opts[1]); err != nil || every < 0 {
			die("cycles: -check-every: not a count: %q", opts[1])
		}
		opts = opts[2:]
	}
	phases := []string{"runp", "create", "startc", "start", "stop", "rm", "stopp", "rmp"}
	times := map[string][]float64{}
	fail := ""
	for i := 0; i < n && fail == ""; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		t := time.Now()
		lap := func(ph string) {
			now := time.Now()
			times[ph] = append(times[ph], float64(now.Sub(t).Microseconds())/1000)
			t = now
		}
		uid := podUID()
		pcfg := podConfig(dir, fmt.Sprintf("%s-%d", name, i), uid, parent+"/pod"+uid, nil)
		do := func(what string, err error) bool {
			if err != nil && fail == "" {
				fail = fmt.Sprintf("cycle %d: %s: %v", i, what, err)
			}
			return err == nil
		}
		pr, err := c.RunPodSandbox(ctx, &rt.RunPodSandboxRequest{Config: pcfg})
		if !do("RunPodSandbox", err) {
			cancel()
			break
		}
		lap("runp")
		pod := pr.PodSandboxId
		cr, err := c.CreateContainer(ctx, &rt.CreateContainerRequest{PodSandboxId: pod,
			Config: ctrConfig("c", image, opts), SandboxConfig: pcfg})
		if do("CreateContainer", err) {
			lap("create")
			_, err = c.StartContainer(ctx, &rt.StartContainerRequest{ContainerId: cr.ContainerId})
			if do("StartContainer", err) {
				lap("startc")
				l := len(times["create"]) - 1
				times["start"] = append(times["start"], times["create"][l]+times["startc"][l])
				if every > 0 && check != "" && i%every == 0 {
					cg, err := initCgroup(c, ctx, cr.ContainerId)
					if do("the container's cgroup", err) {
						cmd := exec.Command("sh", "-c", check)
						cmd.Env = append(os.Environ(), "NXQ_CYC_POD="+pod,
							"NXQ_CYC_CTR="+cr.ContainerId, "NXQ_CYC_CG="+cg)
						cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
						do("check", cmd.Run())
					}
				}
				t = time.Now()
				_, err = c.StopContainer(ctx, &rt.StopContainerRequest{ContainerId: cr.ContainerId})
				if do("StopContainer", err) {
					lap("stop")
				}
			}
			_, err = c.RemoveContainer(ctx, &rt.RemoveContainerRequest{ContainerId: cr.ContainerId})
			if do("RemoveContainer", err) {
				lap("rm")
			}
		}
		_, err = c.StopPodSandbox(ctx, &rt.StopPodSandboxRequest{PodSandboxId: pod})
		if do("StopPodSandbox", err) {
			lap("stopp")
		}
		_, err = c.RemovePodSandbox(ctx, &rt.RemovePodSandboxRequest{PodSandboxId: pod})
		if do("RemovePodSandbox", err) {
			lap("rmp")
		}
		cancel()
		os.RemoveAll(pcfg.LogDirectory)
		// kubelet removes the pod's cgroup once the pod is gone
		if err := os.Remove("/sys/fs/cgroup" + pcfg.Linux.CgroupParent); err != nil &&
			!os.IsNotExist(err) {
			do("rmdir the pod's cgroup", err)
		}
	}
	var out *os.File
	if raw != "" {
		if out, err = os.OpenFile(raw, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			die("%v", err)
		}
		defer out.Close()
	}
	for _, ph := range phases {
		v := times[ph]
		if len(v) == 0 {
			continue
		}
		for _, x := range v {
			if out != nil {
				fmt.Fprintf(out, "%s %.3f\n", ph, x)
			}
		}
		sort.Float64s(v)
		p99 := v[(len(v)*99+99)/100-1]
		fmt.Printf("phase %s: n %d median %.1f ms p99 %.1f ms max %.1f ms\n", ph, len(v),
			v[len(v)/2], p99, v[len(v)-1])
	}
	if fail != "" {
		die("%s", fail)
	}
}

func main() {
	if len(os.Args) < 2 {
		die("usage: nxq-cri runp|create|start|stop|rm|stopp|rmp|exec|state|cycles ...")
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
		cfg := podConfig(dir, a[0], a[1], a[2], a[3:])
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
		cfg := ctrConfig(a[1], a[2], a[3:])
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
	case "cycles":
		need(5)
		cycles(c, dir, a)
	default:
		die("unknown command %q", os.Args[1])
	}
}
