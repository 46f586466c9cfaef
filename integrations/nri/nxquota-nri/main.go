// SPDX-License-Identifier: GPL-2.0
//
// nxquota-nri: an NRI plugin (containerd/nri's stub, NRI API v1alpha1 as
// containerd 1.7 and 2.x speak it) that sets a container's nxquota budgets
// before its first instruction and clears them when it is removed.
//
// The budget rules have one home, nxquota-hook's C code (tools/hook*.c:
// which annotations and NVIDIA_GPU_MEMORY_* count, which GPUs a container
// was given, the pod's budget, the record that undoes it).  This plugin
// does not decide anything itself: it runs nxquota-hook, the C helper, on
// the container's real OCI bundle, exactly as an OCI runtime runs it as a
// createRuntime and a poststop hook:
//
//   - StartContainer (containerd calls it after the task is created --
//     the container's init exists, in its cgroup, stopped before exec --
//     and before the task is started): nxquota-hook createRuntime with the
//     state {id, pid, status "created", bundle, annotations}; the bundle is
//     containerd's (STATE/io.containerd.runtime.v2.task/NS/ID, its
//     config.json, and init.pid, written by the shim at create).  A
//     refusal fails the container's start, with the hook's reason.
//   - RemoveContainer: nxquota-hook poststop (it reads only its record).
//   - Synchronize (at the plugin's start): createRuntime again for every
//     running container, so that a plugin restarted mid-run finds what it
//     set (the hook is idempotent for a container's own budget).
//
// CreateContainer is too early: containerd has made no task yet, so there
// is no cgroup to budget and no pid to read it from.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

type plugin struct {
	stub   stub.Stub
	hook   string // nxquota-hook's path
	state  string // containerd's state directory
	ns     string // containerd namespace of CRI containers
	logger *os.File
}

func (p *plugin) logf(format string, args ...interface{}) {
	fmt.Fprintf(p.logger, "nxquota-nri: "+format+"\n", args...)
}

// bundle: containerd's bundle directory of a container's task.
func (p *plugin) bundle(id string) string {
	return filepath.Join(p.state, "io.containerd.runtime.v2.task", p.ns, id)
}

// initPid: the pid the shim wrote at create (0 when none yet).
func (p *plugin) initPid(id string) (int, error) {
	b, err := os.ReadFile(filepath.Join(p.bundle(id), "init.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// runHook: nxquota-hook STAGE with the OCI state on its stdin; its one
// line on stderr becomes the error.
func (p *plugin) runHook(stage string, st map[string]interface{}) error {
	in, err := json.Marshal(st)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.hook, stage)
	cmd.Stdin = bytes.NewReader(in)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// create: the hook's createRuntime for container c, as a runtime runs it.
func (p *plugin) create(c *api.Container) error {
	pid, err := p.initPid(c.Id)
	if err != nil {
		return fmt.Errorf("container %s: no init pid in its bundle: %v", c.Id, err)
	}
	st := map[string]interface{}{
		"ociVersion":  "1.0.2",
		"id":          c.Id,
		"pid":         pid,
		"status":      "created",
		"bundle":      p.bundle(c.Id),
		"annotations": c.Annotations,
	}
	t0 := time.Now()
	err = p.runHook("createRuntime", st)
	p.logf("createRuntime %s (pid %d): %v in %v", c.Id, pid, errString(err), time.Since(t0))
	return err
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (p *plugin) Configure(ctx context.Context, config, runtime, version string) (stub.EventMask, error) {
	p.logf("connected to %s %s", runtime, version)
	return api.MustParseEventMask("StartContainer,RemoveContainer"), nil
}

func (p *plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	n := 0
	for _, c := range ctrs {
		if c.State != api.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if err := p.create(c); err != nil {
			p.logf("synchronize: %v", err)
		}
		n++
	}
	p.logf("synchronized %d pods, %d running containers", len(pods), n)
	return nil, nil
}

func (p *plugin) StartContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	return p.create(c)
}

func (p *plugin) RemoveContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	st := map[string]interface{}{
		"ociVersion":  "1.0.2",
		"id":          c.Id,
		"status":      "stopped",
		"bundle":      p.bundle(c.Id),
		"annotations": c.Annotations,
	}
	err := p.runHook("poststop", st)
	p.logf("poststop %s: %v", c.Id, errString(err))
	return err
}

func main() {
	p := &plugin{logger: os.Stderr}
	var name, idx, socket string
	flag.StringVar(&name, "name", "nxquota", "plugin name to register with NRI")
	flag.StringVar(&idx, "idx", "50", "plugin index to register with NRI")
	flag.StringVar(&socket, "socket", "/var/run/nri/nri.sock", "NRI socket")
	flag.StringVar(&p.hook, "hook", "/usr/sbin/nxquota-hook", "nxquota-hook, the C helper that decides and sets budgets")
	flag.StringVar(&p.state, "containerd-state", "/run/containerd", "containerd's state directory")
	flag.StringVar(&p.ns, "namespace", "k8s.io", "containerd namespace of the CRI's containers")
	flag.Parse()

	opts := []stub.Option{stub.WithPluginName(name), stub.WithPluginIdx(idx),
		stub.WithSocketPath(socket),
		stub.WithOnClose(func() { p.logf("connection to the runtime lost"); os.Exit(1) })}
	s, err := stub.New(p, opts...)
	if err != nil {
		p.logf("cannot create the plugin stub: %v", err)
		os.Exit(1)
	}
	p.stub = s
	if err := s.Run(context.Background()); err != nil {
		p.logf("plugin exited: %v", err)
		os.Exit(1)
	}
}
