// vc-webhook-manager with the platform's job plugins registered (package platform), so /jobs/validate
// admits `configmap1980`; otherwise Volcano's own admission webhooks through their public packages.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	_ "github.com/jupyter-ranktable/ranktable/controlplane/volcano/platform"
	"volcano.sh/volcano/cmd/webhook-manager/app"
	"volcano.sh/volcano/cmd/webhook-manager/app/options"
	_ "volcano.sh/volcano/pkg/webhooks/admission/cronjobs/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/hypernodes/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobs/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobs/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/podgroups/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/podgroups/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/queues/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/queues/validate"
)

func main() {
	klog.InitFlags(nil)
	config := options.NewConfig()
	config.AddFlags(pflag.CommandLine)
	cliflag.InitFlags()
	defer klog.Flush()
	if err := config.CheckPortOrDie(); err != nil {
		klog.Fatalf("Configured port is invalid: %v", err)
	}
	if err := config.ParseCAFiles(nil); err != nil {
		klog.Fatalf("Failed to parse CA file: %v", err)
	}
	if err := app.Run(config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
