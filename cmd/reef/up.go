package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"reef/emulator"
	"reef/emulator/docker"
	_ "reef/emulator/netns" // registers the netns backend
	"reef/emulator/plan"
	"reef/emulator/topo"
)

func init() { commands = append(commands, upCmd) }

type upOptions struct {
	*options
	seed     uint64
	name     string
	switchd  string
	swArgs   []string
	backend  string
	image    string
	images   []string
	shards   int
	unplaced bool
	place    []string
	offsets  []string
}

func upCmd(o *options) *cobra.Command {
	u := &upOptions{options: o}
	c := &cobra.Command{
		Use:   "up FILE",
		Short: "bring a topology up on network namespaces (hosts, veths, switch daemons)",
		Long: `up loads a topology file, plans it and brings it up on network namespaces: one
namespace per node (reef-<lab>-<node>), a veth pair per link, and the switches in
shards: a switchd daemon runs several switches, and the links between switches of one
shard are carried in memory, with no veth (--shards N; default one shard per two CPUs,
placed to cut few links: a fat-tree splits by pods). up prints the placement. When the
machine has more CPUs than the lab has shards and no other lab is up, each shard runs on
a CPU of its own and the hosts (their daemons, what exec starts in them, the kernel's
receive work for their interfaces) on the rest; up prints that too (--unplaced: leave
it to the scheduler). The lab stays up until "reef down". Run commands in it with "reef exec".
On a terminal, up shows how many nodes, links, hosts and switch daemons it has made.

The switchd binary is $REEF_SWITCHD, else a switchd next to the reef binary, else built
with "go build reef/cmd/switchd" into ~/.cache/reef when run inside the reef module.

With --backend docker every host and switch is a container instead (network mode none,
labelled reef.lab=<lab>), wired and addressed the same way; hosts run reef/hostd:dev or
the image you name (--host-image, --image h1=myimage), switches reef/switchd:dev (see
"reef image build", which up runs itself when reef's images are missing).

With --backend swarm the lab spans the machines of a Docker Swarm (the manager at
$REEF_SWARM, else $DOCKER_HOST; machines are the nodes labelled reef.machine=NAME, each
with reef.engine=ADDR, its own engine's address): one shard per two CPUs of each machine, each host on
its ToR's machine, the links between machines carried by VXLAN (UDP 14789). Move a
shard with --place shard2=m1. Run "reef image build --swarm" first.`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE:         func(cmd *cobra.Command, args []string) error { return upRun(cmd.Context(), u, args[0]) },
	}
	c.Flags().Uint64Var(&u.seed, "seed", 1, "seed for the switches' random choices")
	c.Flags().StringVar(&u.name, "name", "", "lab name (default: the topology's name)")
	c.Flags().StringVar(&u.switchd, "switchd", "", "switchd binary to launch")
	c.Flags().StringArrayVar(&u.swArgs, "switchd-arg", nil, "extra argument for every switchd (repeatable)")
	c.Flags().StringVar(&u.backend, "backend", "netns", "backend: netns, docker (a container per node) or swarm (across machines)")
	c.Flags().StringVar(&u.image, "host-image", "", "docker: image of every host (default "+docker.HostdImage+")")
	c.Flags().StringArrayVar(&u.images, "image", nil, "docker: HOST=IMAGE, the image of one host (repeatable)")
	c.Flags().IntVar(&u.shards, "shards", 0, "netns: how many switch daemons carry the switches, links inside one in memory (default: one per two CPUs)")
	c.Flags().BoolVar(&u.unplaced, "unplaced", false, unplacedUsage)
	addSwarmFlags(c, &u.place, &u.offsets)
	return c
}

func upRun(ctx context.Context, u *upOptions, file string) error {
	t, err := topo.Load(file)
	if err != nil {
		return err
	}
	if u.name != "" {
		t.Name = u.name
	}
	p, err := plan.Build(t, plan.Options{Seed: u.seed})
	if err != nil {
		return err
	}
	be, err := emulator.LookupLab(u.backend)
	if err != nil {
		return err
	}
	uo := emulator.UpOptions{Switchd: u.switchd, SwitchdArgs: u.swArgs, Topology: file, Shards: u.shards, HostImage: u.image, Unplaced: u.unplaced}
	for _, kv := range u.images {
		h, img, ok := strings.Cut(kv, "=")
		if !ok || h == "" || img == "" {
			return fmt.Errorf("--image %q: want HOST=IMAGE", kv)
		}
		if uo.Images == nil {
			uo.Images = map[string]string{}
		}
		uo.Images[h] = img
	}
	if uo.Place, uo.ClockOffsets, err = swarmFlags(u.place, u.offsets); err != nil {
		return err
	}
	status := newUpStatus(os.Stderr, terminal(os.Stderr), p.Lab, nil)
	uo.Progress = status.update
	lab, err := be.Up(ctx, p, uo)
	status.line.clear()
	if err != nil {
		return err
	}
	fmt.Printf("lab %s is up: %d hosts, %d switches, %d links (reef exec NODE -- CMD; reef down %s)\n",
		lab.Name, len(p.Hosts), len(p.Switches), len(p.Links), lab.Name)
	if lab.Placement != "" {
		fmt.Printf("switch daemons: %s\n", lab.Placement)
	}
	if lab.CPUs != "" {
		fmt.Printf("cpus: %s\n", lab.CPUs)
	}
	return nil
}

// unplacedUsage is the help of up's and run's --unplaced.
const unplacedUsage = "netns: leave the daemons wherever the scheduler puts them (default: when the machine has more CPUs than the lab has switch daemons and no other lab is up, each switch daemon runs on a CPU of its own and the hosts on the rest)"

// addSwarmFlags adds the Swarm backend's placement flags to c.
func addSwarmFlags(c *cobra.Command, place, offsets *[]string) {
	c.Flags().StringArrayVar(place, "place", nil, "swarm: SHARD=MACHINE, run a shard on a machine of your choice (repeatable)")
	c.Flags().StringArrayVar(offsets, "clock-offset", nil, "swarm: MACHINE=DURATION, move a machine's clock (to see what an offset between machines does; repeatable)")
}

// swarmFlags parses --place and --clock-offset.
func swarmFlags(place, offsets []string) (map[string]string, map[string]time.Duration, error) {
	var pm map[string]string
	for _, kv := range place {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, nil, fmt.Errorf("--place %q: want SHARD=MACHINE (e.g. shard2=m1)", kv)
		}
		if pm == nil {
			pm = map[string]string{}
		}
		pm[k] = v
	}
	var om map[string]time.Duration
	for _, kv := range offsets {
		k, v, ok := strings.Cut(kv, "=")
		d, err := time.ParseDuration(v)
		if !ok || k == "" || err != nil {
			return nil, nil, fmt.Errorf("--clock-offset %q: want MACHINE=DURATION (e.g. m2=200us)", kv)
		}
		if om == nil {
			om = map[string]time.Duration{}
		}
		om[k] = d
	}
	return pm, om, nil
}
