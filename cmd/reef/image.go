package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"reef/emulator/docker"
	"reef/emulator/swarm"
)

func init() { commands = append(commands, imageCmd) }

func imageCmd(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "manage the Docker images reef runs (reef image build)",
	}
	var tools, onSwarm bool
	b := &cobra.Command{
		Use:   "build",
		Short: "build reef/switchd:dev and reef/hostd:dev (and reef/tools:dev) from static binaries, no registry",
		Long: `build imports reef's images into the local Docker engine from static builds of
switchd, hostd and reefpause (CGO_ENABLED=0; built in ~/.cache/reef/static when run inside
the reef module, else taken from $REEF_STATIC_DIR or next to the reef binary). Nothing is
pulled: each image is a tar rootfs imported with "docker import" semantics.

  reef/switchd:dev  entrypoint /switchd (the switch containers of "reef up --backend docker")
  reef/hostd:dev    /hostd and /reefpause, entrypoint /reefpause (the default host image)
  reef/tools:dev    (--tools) reef/hostd:dev plus a static busybox (sh, ping, ip, nc, wget …)
                    copied from /bin/busybox (Debian: apt-get install busybox-static)

Any other image can be a host (reef up --backend docker --image h1=myimage): reef mounts
its static daemons at /reef inside it.

With --swarm it imports reef/agent:dev (reef, its daemons, busybox and iperf3) into the
engine of every machine of the Swarm (the nodes labelled reef.machine, each reached at
its reef.engine address), the image a Swarm lab's task runs on each machine.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if onSwarm {
				return buildOnSwarm(cmd.Context())
			}
			c, err := docker.NewClient()
			if err != nil {
				return err
			}
			imgs, err := docker.BuildImages(cmd.Context(), c, docker.ImageOptions{Tools: tools})
			for _, im := range imgs {
				fmt.Println("built", im)
			}
			return err
		},
	}
	b.Flags().BoolVar(&tools, "tools", false, "also build reef/tools:dev with a static busybox")
	b.Flags().BoolVar(&onSwarm, "swarm", false, "build "+docker.AgentImage+" into every machine's engine of the Swarm ($REEF_SWARM)")
	c.AddCommand(b)
	return c
}

// buildOnSwarm imports the agent image into every machine's engine.
func buildOnSwarm(ctx context.Context) error {
	ms, err := swarm.ListMachines(ctx, "")
	if err != nil {
		return err
	}
	for _, m := range ms {
		c, err := docker.NewClientAt(m.Engine)
		if err != nil {
			return err
		}
		missing, err := docker.BuildAgentImage(ctx, c)
		if err != nil {
			return fmt.Errorf("machine %s: %w", m.Name, err)
		}
		fmt.Printf("built %s on %s (%s)\n", docker.AgentImage, m.Name, m.Engine)
		for _, x := range missing {
			fmt.Printf("  left out: %s\n", x)
		}
	}
	return nil
}
