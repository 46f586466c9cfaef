// SPDX-License-Identifier: GPL-2.0
//
// nxquota-nri: an NRI plugin (containerd/nri's stub, NRI API v1alpha1 as
// containerd 1.7 and 2.x speak it) that gives a container what the
// operator's CDI spec gives one, sets its nxquota budgets before its first
// instruction and clears them when it is removed.
//
// The budget rules have one home, nxquota-hook's C code (tools/hook*.c:
// which annotations and NVIDIA_GPU_MEMORY_* count, which GPUs a container
// was given, the pod's budget, the record that undoes it).  This plugin
// does not decide anything itself: it runs nxquota-hook, the C helper,
// exactly as an OCI runtime runs it as a createRuntime and a poststop hook,
// and its `given` stage where only NRI can act:
//
//   - CreateContainer (the only event whose answer can adjust the
//     container): `nxquota-hook given` on the container as NRI shows it
//     (annotations, env, linux.devices in config.json's shape) says which
//     nxquota devices it was given; a container given any gets the edits
//     of the operator's CDI spec (--cdi-spec, as `nxquotactl cdi generate`
//     wrote it): the spec's containerEdits and each given device's, env,
//     deviceNodes (but those the container has) and mounts, translated
//     one for one into the NRI adjustment -- the authority, the shim and
//     LD_PRELOAD, the preload list at /etc/ld.so.preload, NXQUOTA_REQUIRE
//     and /etc/nxquota/require.  The spec's hooks are left out: the
//     plugin runs the hook itself.  A container given none is not
//     touched.
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
//     set (the hook is idempotent for a container's own budget); after the
//     reply, so that registration ends within containerd's timeout.
//
// Every hook run waits on the authority at most -hook-timeout (0.8 s) per
// phase, so that a request is answered within containerd's
// plugin_request_timeout (2 s by default): past it containerd drops the
// plugin and starts the container without it.
//
// The containers of the plugin's own pod (-exempt-pod-uid, set by the
// DaemonSet) are left alone at every event: see exempted().
//
// CreateContainer is too early for budgets: containerd has made no task
// yet, so there is no cgroup to budget and no pid to read it from.
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
	"syscall"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"golang.org/x/sys/unix"
)

type plugin struct {
	stub   stub.Stub
	hook   string // nxquota-hook's path
	state  string // containerd's state directory
	ns     string // containerd namespace of CRI containers
	spec   string // the operator's CDI spec (nxquotactl cdi generate)
	exempt string // the UID of the pod this plugin runs in, or ""
	tmo    string // nxquota-hook --timeout: each wait on the authority
	logger *os.File
}

// exempted: pod is the one this plugin runs in (-exempt-pod-uid, its
// DaemonSet's pod).  Its containers are not touched at any event: that
// pod's nxquotad container is privileged (every host device, the GPUs'
// nodes among them) and names the GPUs, so it would be "given" them --
// its create would wait on the authority it is itself (a restarted
// nxquotad could never start again), and would get the shim, the
// preload list and the client socket's directory read-only over the
// /run/nxquota where it binds that socket.  The UID comes from the
// kubelet (the downward API), not from anything a tenant writes.
func (p *plugin) exempted(pod *api.PodSandbox) bool {
	return p.exempt != "" && pod != nil && pod.GetUid() == p.exempt
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

// runHookOut: nxquota-hook STAGE with in (JSON) on its stdin: its
// stdout; its one line on stderr becomes the error.
func (p *plugin) runHookOut(stage string, in interface{}) ([]byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.hook, "--timeout", p.tmo, stage)
	cmd.Stdin = bytes.NewReader(b)
	var outb, errb bytes.Buffer
	cmd.Stdout = &outb
	cmd.Stderr = &errb
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s", msg)
	}
	return outb.Bytes(), nil
}

// runHook: nxquota-hook STAGE with the OCI state on its stdin.
func (p *plugin) runHook(stage string, st map[string]interface{}) error {
	_, err := p.runHookOut(stage, st)
	return err
}

// annotations: what the hook reads as container c's annotations: its
// own, and its pod's nxquota.io/ ones it has no key of (its own win).
// Kubernetes annotates pods: kubelet gives the pod's annotations to
// RunPodSandbox and none of them to a container's config, and containerd
// copies them into a container's OCI spec only where its runtime's
// pod_annotations allows them.  NRI gives the plugin the pod, so an
// nxquota.io/ annotation on a pod counts with no containerd setting.
func annotations(pod *api.PodSandbox, c *api.Container) map[string]string {
	m := map[string]string{}
	if pod != nil {
		for k, v := range pod.Annotations {
			if strings.HasPrefix(k, "nxquota.io/") {
				m[k] = v
			}
		}
	}
	for k, v := range c.Annotations {
		m[k] = v
	}
	return m
}

// create: the hook's createRuntime for container c of pod, as a runtime
// runs it.
func (p *plugin) create(pod *api.PodSandbox, c *api.Container) error {
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
		"annotations": annotations(pod, c),
	}
	t0 := time.Now()
	err = p.runHook("createRuntime", st)
	p.logf("createRuntime %s (pid %d): %v in %v", c.Id, pid, errString(err), time.Since(t0))
	return err
}

// ---- CreateContainer: what the CDI spec gives ------------------------------

// The members of a CDI spec (cdiVersion 0.5.0, as nxquotactl writes it)
// this plugin reads.
type cdiNode struct {
	Path     string  `json:"path"`
	HostPath string  `json:"hostPath"`
	Type     string  `json:"type"`
	Major    *int64  `json:"major"`
	Minor    *int64  `json:"minor"`
	FileMode *uint32 `json:"fileMode"`
	UID      *uint32 `json:"uid"`
	GID      *uint32 `json:"gid"`
}

type cdiMount struct {
	HostPath      string   `json:"hostPath"`
	ContainerPath string   `json:"containerPath"`
	Type          string   `json:"type"`
	Options       []string `json:"options"`
}

type cdiEdits struct {
	Env         []string   `json:"env"`
	DeviceNodes []cdiNode  `json:"deviceNodes"`
	Mounts      []cdiMount `json:"mounts"`
}

type cdiSpec struct {
	Kind    string `json:"kind"`
	Devices []struct {
		Name           string   `json:"name"`
		ContainerEdits cdiEdits `json:"containerEdits"`
	} `json:"devices"`
	ContainerEdits cdiEdits `json:"containerEdits"`
}

// givenReport: nxquota-hook given's answer.
type givenReport struct {
	Given      []string `json:"given"`
	Budget     bool     `json:"budget"`
	Unresolved string   `json:"unresolved"`
}

// given: nxquota-hook given on container c of pod, as config.json would
// have it.
func (p *plugin) given(pod *api.PodSandbox, c *api.Container) (*givenReport, error) {
	devs := []map[string]interface{}{}
	if c.Linux != nil {
		for _, d := range c.Linux.Devices {
			devs = append(devs, map[string]interface{}{"path": d.Path,
				"type": d.Type, "major": d.Major, "minor": d.Minor})
		}
	}
	env := c.Env
	if env == nil {
		env = []string{}
	}
	cfg := map[string]interface{}{
		"annotations": annotations(pod, c),
		"process":     map[string]interface{}{"env": env},
		"linux":       map[string]interface{}{"devices": devs},
	}
	out, err := p.runHookOut("given", cfg)
	if err != nil {
		return nil, err
	}
	r := &givenReport{}
	if err := json.Unmarshal(out, r); err != nil {
		return nil, fmt.Errorf("nxquota-hook given: %v: %q", err, out)
	}
	return r, nil
}

// node: a CDI deviceNode as NRI adds it; what the spec leaves out (type,
// major, minor) is the host node's, as CDI runtimes fill it in.
func node(n cdiNode) (*api.LinuxDevice, error) {
	host := n.HostPath
	if host == "" {
		host = n.Path
	}
	d := &api.LinuxDevice{Path: n.Path, Type: n.Type}
	if n.Type == "" || n.Major == nil || n.Minor == nil {
		var st unix.Stat_t
		if err := unix.Stat(host, &st); err != nil {
			return nil, fmt.Errorf("the spec's device node %s: %v", host, err)
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFCHR:
			d.Type = "c"
		case syscall.S_IFBLK:
			d.Type = "b"
		default:
			return nil, fmt.Errorf("the spec's device node %s is not a device", host)
		}
		d.Major, d.Minor = int64(unix.Major(uint64(st.Rdev))), int64(unix.Minor(uint64(st.Rdev)))
	}
	if n.Major != nil {
		d.Major = *n.Major
	}
	if n.Minor != nil {
		d.Minor = *n.Minor
	}
	if n.FileMode != nil {
		d.FileMode = api.FileMode(*n.FileMode)
	}
	d.Uid = api.UInt32(n.UID)
	d.Gid = api.UInt32(n.GID)
	return d, nil
}

// adjust: the edits into a, but the device nodes the container has.
func adjust(a *api.ContainerAdjustment, e *cdiEdits, have map[string]bool) error {
	for _, kv := range e.Env {
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return fmt.Errorf("the spec's env %q is not NAME=VALUE", kv)
		}
		a.AddEnv(kv[:i], kv[i+1:])
	}
	for _, n := range e.DeviceNodes {
		if have[n.Path] {
			continue
		}
		d, err := node(n)
		if err != nil {
			return err
		}
		a.AddDevice(d)
		have[n.Path] = true
	}
	for _, m := range e.Mounts {
		a.AddMount(&api.Mount{Destination: m.ContainerPath, Source: m.HostPath,
			Type: m.Type, Options: m.Options})
	}
	return nil
}

// inject: the adjustment of container c, given the devices keys: the
// spec's common edits and each device's.  The spec is read each time (a
// few KiB): one the operator generates again counts at once.
func (p *plugin) inject(c *api.Container, keys []string) (*api.ContainerAdjustment, error) {
	b, err := os.ReadFile(p.spec)
	if err != nil {
		return nil, fmt.Errorf("the CDI spec: %v (nxquotactl cdi generate --output %s writes it)", err, p.spec)
	}
	spec := &cdiSpec{}
	if err := json.Unmarshal(b, spec); err != nil {
		return nil, fmt.Errorf("the CDI spec %s: %v", p.spec, err)
	}
	a := &api.ContainerAdjustment{}
	have := map[string]bool{}
	if c.Linux != nil {
		for _, d := range c.Linux.Devices {
			have[d.Path] = true
		}
	}
	if err := adjust(a, &spec.ContainerEdits, have); err != nil {
		return nil, fmt.Errorf("the CDI spec %s: %v", p.spec, err)
	}
	for _, k := range keys {
		found := false
		for i := range spec.Devices {
			if spec.Devices[i].Name != k {
				continue
			}
			found = true
			if err := adjust(a, &spec.Devices[i].ContainerEdits, have); err != nil {
				return nil, fmt.Errorf("the CDI spec %s, device %s: %v", p.spec, k, err)
			}
		}
		if !found {
			return nil, fmt.Errorf("the CDI spec %s has no device %s, registered "+
				"since it was written? (nxquotactl cdi generate --output %s)", p.spec, k, p.spec)
		}
	}
	return a, nil
}

func (p *plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if p.exempted(pod) {
		p.logf("create %s (%s): in the plugin's own pod, not touched", c.Id, c.Name)
		return nil, nil, nil
	}
	t0 := time.Now()
	r, err := p.given(pod, c)
	if err != nil {
		p.logf("create %s (%s): %v", c.Id, c.Name, err)
		return nil, nil, err
	}
	if r.Unresolved != "" {
		p.logf("create %s (%s): no nxquota device decided, nothing injected: %s", c.Id, c.Name, r.Unresolved)
	}
	if len(r.Given) == 0 {
		return nil, nil, nil
	}
	a, err := p.inject(c, r.Given)
	if err != nil {
		err = fmt.Errorf("nxquota-nri: container %s given %s: %v", c.Id, strings.Join(r.Given, ","), err)
		p.logf("%v", err)
		return nil, nil, err
	}
	p.logf("create %s (%s): given %s, budget %v: %d env, %d device nodes, %d mounts in %v",
		c.Id, c.Name, strings.Join(r.Given, ","), r.Budget, len(a.Env), len(a.GetLinux().GetDevices()),
		len(a.Mounts), time.Since(t0))
	return a, nil, nil
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (p *plugin) Configure(ctx context.Context, config, runtime, version string) (stub.EventMask, error) {
	p.logf("connected to %s %s", runtime, version)
	return api.MustParseEventMask("CreateContainer,StartContainer,RemoveContainer"), nil
}

func (p *plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	own := map[string]bool{}
	byID := map[string]*api.PodSandbox{}
	for _, pod := range pods {
		byID[pod.GetId()] = pod
		if p.exempted(pod) {
			own[pod.GetId()] = true
		}
	}
	// The hook runs for each running container after the reply: the
	// registration (Synchronize included) must end within containerd's
	// plugin_registration_timeout (5 s by default), which a node's worth of
	// containers at one hook each would pass -- containerd would drop the
	// plugin, and it would never register.  Events meanwhile run beside it
	// (the hook locks what two runs share; it is idempotent).
	var run []*api.Container
	for _, c := range ctrs {
		if c.State == api.ContainerState_CONTAINER_RUNNING && !own[c.GetPodSandboxId()] {
			run = append(run, c)
		}
	}
	go func() {
		for _, c := range run {
			if err := p.create(byID[c.GetPodSandboxId()], c); err != nil {
				p.logf("synchronize: %v", err)
			}
		}
		p.logf("synchronized %d pods, %d running containers", len(pods), len(run))
	}()
	return nil, nil
}

func (p *plugin) StartContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if p.exempted(pod) {
		return nil
	}
	return p.create(pod, c)
}

func (p *plugin) RemoveContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if p.exempted(pod) {
		return nil
	}
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
	flag.StringVar(&p.spec, "cdi-spec", "/etc/cdi/nxquota.json", "the CDI spec nxquotactl cdi generate wrote: what a container given an nxquota device gets")
	flag.StringVar(&p.exempt, "exempt-pod-uid", "", "the UID of the pod this plugin runs in (a DaemonSet's: $(POD_UID) from the downward API), whose containers it leaves alone")
	// Each NRI request must be answered within containerd's
	// plugin_request_timeout (2 s by default), or containerd drops the
	// plugin and starts the container without it: uncharged.  A hook run
	// waits on the authority at most its timeout per phase, and an undo as
	// long again: 0.8 s keeps a refusal, undone, under 2 s.
	flag.StringVar(&p.tmo, "hook-timeout", "0.8", "nxquota-hook --timeout: seconds each wait on the authority may take (keep twice it under containerd's plugin_request_timeout)")
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
