package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/infra/images"
)

func imagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build and list chaoslab's container images (no registry needed)",
		Long: fmt.Sprintf(`chaoslab builds its container images on this machine, with no registry:

  %-32s Debian %s (mmdebstrap from this machine's APT
  %-32s mirrors) with ZooKeeper and a headless JRE; the
  %-32s official image's ZOO_* variables work
  %-32s FROM scratch, etcd/etcdctl/etcdutl built from source
  %-32s FROM scratch, consul built from source (MPL-2.0 line)
  %-32s FROM scratch, this chaoslab (client workloads)
  %-32s only when named (images build python): Debian's
  %-32s python3 and kazoo, the Python examples in /examples

The binaries are built in the Go modules under tools/ and cached by version
(in $CHAOSLAB_CACHE, else $XDG_CACHE_HOME/chaoslab/bin or ~/.cache/chaoslab/bin).
Run it inside the source tree (or set CHAOSLAB_SRC).

Exit status: 0; 2 for a bad flag or argument; 3 when an image could not
be built or listed.`,
			images.ZooKeeperRef, images.DebianSuite, "", "", images.EtcdRef, images.ConsulRef, images.ChaoslabRef(""), images.PythonRef, ""),
	}
	cmd.AddCommand(imagesBuildCmd(), imagesListCmd(), imagesBinariesCmd())
	return cmd
}

func imagesBuildCmd() *cobra.Command {
	var opts images.Options
	cmd := &cobra.Command{
		Use:   "build [NAME...] [--only zookeeper,etcd,consul,postgresql,chaoslab,python] [--force]",
		Short: "Build the images that are missing or out of date",
		Long: `Build the images that are missing or whose build inputs changed (each carries
the label org.chaoslab.version = version + hash of its inputs); up-to-date
images are skipped. The first build takes minutes (Consul alone ~5 min on 2
cores, with a 2 GB module download); later ones use cached binaries.

Without names (arguments or --only) it builds ` + strings.Join(images.Names, ", ") + `;
` + strings.Join(images.Extra, ", ") + ` only when named: chaoslab images build python.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Only = append(opts.Only, args...)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Logger = slog.Default()
			opts.Progress = cmd.ErrOrStderr()
			start := time.Now()
			res, err := images.Build(ctx, opts)
			out := cmd.OutOrStdout()
			if len(res) > 0 {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "IMAGE\tREF\tSIZE\tTOOK\tSTATUS")
				for _, r := range res {
					status := "built"
					if !r.Built {
						status = "up to date"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Ref, images.HumanSize(r.Size), r.Took.Round(100*time.Millisecond), status)
				}
				tw.Flush()
				fmt.Fprintf(out, "total %s\n", time.Since(start).Round(100*time.Millisecond))
			}
			return err
		},
	}
	cmd.Flags().StringSliceVar(&opts.Only, "only", nil, "build only these images (zookeeper, etcd, consul, postgresql, chaoslab, python; comma-separated)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "rebuild even the images that are up to date (cached binaries are reused)")
	cmd.Flags().StringVar(&opts.ChaoslabTag, "chaoslab-tag", images.DefaultChaoslabTag, "tag of the chaoslab image")
	return cmd
}

func imagesListCmd() *cobra.Command {
	var opts images.Options
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the images, their sizes, and whether they are up to date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Logger = slog.Default()
			res, err := images.ListWith(cmd.Context(), opts)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tREF\tSIZE\tVERSION\tSTATUS")
			for _, r := range res {
				hint := "chaoslab images build"
				if slices.Contains(images.Extra, r.Name) {
					hint += " " + r.Name // not in the default set
				}
				size, status := "-", "missing ("+hint+")"
				if r.Present {
					size, status = images.HumanSize(r.Size), "up to date"
					if !r.Current {
						status = "out of date (" + hint + ")"
					}
				}
				version := r.Version
				if version == "" {
					version = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Ref, size, version, status)
			}
			tw.Flush()
			return err
		},
	}
	cmd.Flags().StringSliceVar(&opts.Only, "only", nil, "list only these images")
	cmd.Flags().StringVar(&opts.ChaoslabTag, "chaoslab-tag", images.DefaultChaoslabTag, "tag of the chaoslab image")
	return cmd
}

func imagesBinariesCmd() *cobra.Command {
	var opts images.Options
	var only []string
	var cached bool
	cmd := &cobra.Command{
		Use:   "binaries [--only etcd,consul,chaoslab,kubernetes] [--cached]",
		Short: "Build the server binaries for this machine (etcd, consul, chaoslab), no Docker needed",
		Long: `Build the binaries the local placement runs and the images hold (etcd and
consul from the modules under tools/, a static chaoslab from this source
tree), or find them in the cache; print where each is. The images are made
from the same cached binaries, and two builds of one binary at once (two
test packages, two commands) take turns under a lock. The test command runs
it while Debian's packages install.

--only kubernetes builds the test cluster's binaries instead (kube-apiserver,
kube-controller-manager, kube-scheduler, kubelet, kubectl, ` + images.KubeVersion + `, from
tools/kubernetes, ~12 min cold on 2 cores) and its pause image, a docker-save
archive (scripts/kube-up.sh runs it; never part of the default set).
With --cached it builds nothing: it says where the cached ones are, and
fails when one is not built (the test command starts the test cluster
only where its binaries are already there).

Exit status: 0; 2 for a bad flag; 3 when a binary could not be built (or,
with --cached, is not in the cache).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Logger = slog.Default()
			opts.Progress = cmd.ErrOrStderr()
			all := []string{"etcd", "consul", "chaoslab", "kubernetes"}
			want := map[string]bool{}
			for _, n := range only {
				n = strings.TrimSpace(strings.ToLower(n))
				if !slices.Contains(all, n) {
					return errInput(fmt.Errorf("--only %s: want %s", n, strings.Join(all, ", ")))
				}
				want[n] = true
			}
			if len(want) == 0 {
				want = map[string]bool{"etcd": true, "consul": true, "chaoslab": true}
			}
			if cached && (len(want) != 1 || !want["kubernetes"]) {
				return errInput(errors.New("--cached goes with --only kubernetes"))
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			defer tw.Flush()
			fmt.Fprintln(tw, "BINARY\tPATH\tTOOK")
			for _, b := range []struct {
				name  string
				build func(context.Context, images.Options) (string, error)
			}{{"etcd", images.EtcdBinary}, {"consul", images.ConsulBinary}, {"chaoslab", images.ChaoslabBinary}} {
				if !want[b.name] {
					continue
				}
				start := time.Now()
				path, err := b.build(ctx, opts)
				if err != nil {
					return fmt.Errorf("build %s: %w", b.name, err)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", b.name, path, time.Since(start).Round(100*time.Millisecond))
			}
			if want["kubernetes"] {
				start := time.Now()
				find := images.Kubernetes
				if cached {
					find = images.KubernetesCached
				}
				k, err := find(ctx, opts)
				if err != nil {
					return fmt.Errorf("build kubernetes: %w", err)
				}
				took := time.Since(start).Round(100 * time.Millisecond)
				for _, n := range images.KubeBinaries {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", n, k.Bin[n], took)
				}
				fmt.Fprintf(tw, "pause-image\t%s\t%s\n", k.PauseImage, took)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&cached, "cached", false, "build nothing: fail when the kubernetes binaries are not in the cache (only with --only kubernetes)")
	cmd.Flags().StringSliceVar(&only, "only", nil, "build only these (etcd, consul, chaoslab, kubernetes; comma-separated); default etcd, consul and chaoslab")
	return cmd
}
