import * as React from 'react';
import { TranslationBundle } from '@jupyterlab/translation';
import { AccordionPanel } from '@lumino/widgets';
import {
  ReactWidget,
  SidePanel,
  refreshIcon,
  ToolbarButton
} from '@jupyterlab/ui-components';

import { IKeyValueStore, RanktableModel } from './connections/model';
import { ConnectionsSection } from './connections/view';
import { SyncSection } from './sync/view';
import { KernelsSection } from './kernels/view';
import { JobsList } from './jobs/view';
import { ForwardsSection } from './forwards/view';
import { ForwardsModel } from './forwards/model';
import { RemoteKernelsModel } from './kernels/model';
import { IRunRef, JobsModel } from './jobs/model';
import { RightsContext } from './permissions/view';

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
  const props = { model, trans };
  const forwards = new ForwardsModel();
  const remoteKernels = new RemoteKernelsModel();
  panel.addWidget(
    section(jobs, trans.__('Connections'), 'connections', () => (
      <ConnectionsSection {...props} />
    ))
  );
  panel.addWidget(
    section(jobs, trans.__('Jobs'), 'jobs', () => (
      <JobsList jobs={jobs} trans={trans} onOpen={options.openRun} />
    ))
  );
  panel.addWidget(
    section(jobs, trans.__('Sync'), 'sync', () => <SyncSection {...props} />)
  );
  panel.addWidget(
    section(jobs, trans.__('Remote kernels'), 'kernels', () => (
      <KernelsSection
        {...props}
        openNotebook={options.openNotebook}
        remoteKernels={remoteKernels}
      />
    ))
  );
  panel.addWidget(
    section(jobs, trans.__('Port forwards'), 'forwards', () => (
      <ForwardsSection {...props} forwards={forwards} />
    ))
  );
  restoreCollapsed(panel, model.store);
  // back after an outage: the polled sections read again now, not at their next poll (no stale error)
  const reread = () => {
    void forwards.refresh();
    void remoteKernels.refresh();
  };
  jobs.stream.reconnected.connect(reread);
  // each section is as tall as its content and the panel scrolls (style/base.css): nothing is cut at a
  // section's bottom edge
  panel.disposed.connect(() => {
    jobs.stream.reconnected.disconnect(reread);
    forwards.dispose();
    remoteKernels.dispose();
  });
  addToolbar(panel, jobs, trans, options.newSpec);
  return panel;
}

/** A sidebar section: `render`'s element under the user's rights, titled and styled as a section. */
function section(
  jobs: JobsModel,
  title: string,
  id: string,
  render: () => JSX.Element
): ReactWidget {
  const widget = ReactWidget.create(
    <RightsContext.Provider value={jobs.permissions}>
      {render()}
    </RightsContext.Provider>
  );
  widget.title.label = title;
  widget.id = `jp-Ranktable-section-${id}`;
  widget.addClass('jp-Ranktable-section');
  return widget;
}

/** The panel's toolbar: New job and Refresh jobs. */
function addToolbar(
  panel: SidePanel,
  jobs: JobsModel,
  trans: TranslationBundle,
  newSpec: () => void
): void {
  panel.toolbar.addItem(
    'new-job',
    new ToolbarButton({
      label: trans.__('New job'),
      tooltip: trans.__('New Ranktable job spec'),
      onClick: newSpec
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
}

/** The state key of the sections the user collapsed (by their widget ids). */
export const COLLAPSED_KEY = 'sidebar-collapsed';

/**
 * Sections collapsed or expanded by the user stay so across reloads: their ids are saved in the state
 * database on each toggle and collapsed again when the panel is built.
 */
export function restoreCollapsed(
  panel: SidePanel,
  store: IKeyValueStore
): void {
  const accordion = panel.content as AccordionPanel;
  const sections = () => accordion.widgets;
  let loaded = false;
  void store
    .load<string[]>(COLLAPSED_KEY)
    .then(ids => {
      sections().forEach((w, i) => {
        if (ids?.includes(w.id) && !w.isHidden) {
          accordion.collapse(i);
        }
      });
    })
    .catch(() => undefined)
    .then(() => {
      loaded = true;
    });
  accordion.expansionToggled.connect(() => {
    if (loaded) {
      const ids = sections()
        .filter(w => w.isHidden)
        .map(w => w.id);
      void store.save(COLLAPSED_KEY, ids).catch(() => undefined);
    }
  });
}
