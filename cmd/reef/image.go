package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"reef/emulator/docker"
)

func init() { commands = append(commands, imageCmd) }

func imageCmd(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "manage the Docker images reef runs (reef image build)",
	}
	var tools bool
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
its static daemons at /reef inside it.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	c.AddCommand(b)
	return c
}
