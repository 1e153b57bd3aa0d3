// Package platform registers the job plugins that ModelArts Lite's Volcano has and upstream Volcano lacks,
// so Volcano's webhook admits and its job controller runs the platform's Job manifests unchanged.
package platform

import (
	v1 "k8s.io/api/core/v1"

	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/job/plugins"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"
)

// Configmap1980 is the name of the platform's rank-table plugin.
const Configmap1980 = "configmap1980"

// rankTablePlugin has no Volcano-side work: the rank table itself is written by ranktable's
// configmap1980 controller (ranktable/sim/real/agents.py), which watches Jobs that name this plugin.
type rankTablePlugin struct{ args []string }

func (p *rankTablePlugin) Name() string                                { return Configmap1980 }
func (p *rankTablePlugin) OnPodCreate(_ *v1.Pod, _ *vcbatch.Job) error { return nil }
func (p *rankTablePlugin) OnJobAdd(_ *vcbatch.Job) error               { return nil }
func (p *rankTablePlugin) OnJobDelete(_ *vcbatch.Job) error            { return nil }
func (p *rankTablePlugin) OnJobUpdate(_ *vcbatch.Job) error            { return nil }

func init() {
	plugins.RegisterPluginBuilder(Configmap1980, func(_ pluginsinterface.PluginClientset, args []string) pluginsinterface.PluginInterface {
		return &rankTablePlugin{args: args}
	})
}
