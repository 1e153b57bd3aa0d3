import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import {
  ReactWidget,
  SidePanel,
  refreshIcon,
  ToolbarButton
} from '@jupyterlab/ui-components';

import { RanktableModel } from './connections/model';
import { ConnectionsSection } from './connections/view';
import { SyncSection } from './sync/view';
import { KernelsSection } from './kernels/view';
import { JobsList } from './jobs/view';
import { ForwardsSection } from './forwards/view';
import { ForwardsModel } from './forwards/model';
import { RemoteKernelsModel } from './kernels/model';
import { IRunRef, JobsModel } from './jobs/model';

/**
 * The Ranktable sidebar: a SidePanel whose sections (Connections, Jobs, Sync, Remote kernels, Port forwards) each
 * render their own model; documents (job specs, Job views, layouts) open in the main area.
 */
export function createSidebar(options: {
  model: RanktableModel;
  jobs: JobsModel;
  trans: TranslationBundle;
  openRun: (run: IRunRef) => void;
  openNotebook: (kernelName: string) => Promise<void>;
  newSpec: () => void;
}): SidePanel {
  const { model, jobs, trans } = options;
  const panel = new SidePanel({ translator: undefined });
  panel.addClass('jp-Ranktable-panel');
  const section = (
    title: string,
    id: string,
    render: () => JSX.Element
  ): ReactWidget => {
    const widget = ReactWidget.create(render());
    widget.title.label = title;
    widget.id = `jp-Ranktable-section-${id}`;
    widget.addClass('jp-Ranktable-section');
    return widget;
  };
  const props = { model, trans };
  const forwards = new ForwardsModel();
  const remoteKernels = new RemoteKernelsModel();
  panel.addWidget(
    section(trans.__('Connections'), 'connections', () => (
      <ConnectionsSection {...props} />
    ))
  );
  panel.addWidget(
    section(trans.__('Jobs'), 'jobs', () => (
      <JobsList jobs={jobs} trans={trans} onOpen={options.openRun} />
    ))
  );
  panel.addWidget(
    section(trans.__('Sync'), 'sync', () => <SyncSection {...props} />)
  );
  panel.addWidget(
    section(trans.__('Remote kernels'), 'kernels', () => (
      <KernelsSection
        {...props}
        openNotebook={options.openNotebook}
        remoteKernels={remoteKernels}
      />
    ))
  );
  panel.addWidget(
    section(trans.__('Port forwards'), 'forwards', () => (
      <ForwardsSection {...props} forwards={forwards} />
    ))
  );
  // each section is as tall as its content and the panel scrolls (style/base.css): nothing is cut at a
  // section's bottom edge
  panel.disposed.connect(() => {
    forwards.dispose();
    remoteKernels.dispose();
  });
  panel.toolbar.addItem(
    'new-job',
    new ToolbarButton({
      label: trans.__('New job'),
      tooltip: trans.__('New Ranktable job spec'),
      onClick: options.newSpec
    })
  );
  panel.toolbar.addItem(
    'refresh',
    new ToolbarButton({
      icon: refreshIcon,
      tooltip: trans.__('Refresh jobs'),
      onClick: () => void jobs.refresh()
    })
  );
  return panel;
}
