// vc-controller-manager with the platform's job plugins registered (package platform); otherwise
// Volcano's own controller-manager, started through its public app/options packages.
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	_ "github.com/jupyter-ranktable/ranktable/controlplane/volcano/platform"
	"volcano.sh/volcano/cmd/controller-manager/app"
	"volcano.sh/volcano/cmd/controller-manager/app/options"
	_ "volcano.sh/volcano/pkg/controllers/cronjob"
	"volcano.sh/volcano/pkg/controllers/framework"
	_ "volcano.sh/volcano/pkg/controllers/garbagecollector"
	_ "volcano.sh/volcano/pkg/controllers/hypernode"
	_ "volcano.sh/volcano/pkg/controllers/job"
	_ "volcano.sh/volcano/pkg/controllers/jobflow"
	_ "volcano.sh/volcano/pkg/controllers/jobtemplate"
	_ "volcano.sh/volcano/pkg/controllers/podgroup"
	_ "volcano.sh/volcano/pkg/controllers/queue"
	commonutil "volcano.sh/volcano/pkg/util"
)

func main() {
	klog.InitFlags(nil)
	fs := pflag.CommandLine
	s := options.NewServerOption()
	var names []string
	framework.ForeachController(func(c framework.Controller) { names = append(names, c.Name()) })
	sort.Strings(names)
	s.AddFlags(fs, names)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	commonutil.LeaderElectionDefault(&s.LeaderElection)
	s.LeaderElection.ResourceName = "vc-controller-manager"
	componentbaseoptions.BindLeaderElectionFlags(&s.LeaderElection, fs)
	cliflag.InitFlags()
	if err := s.CheckOptionOrDie(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer klog.Flush()
	if err := app.Run(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
