import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import type { StreamClient } from '../api/client';
import { IRunRef, JobsModel } from '../jobs/model';
import { JobViewContent, createJobView, jobViewId } from './view';

/** Job views: one per run, tracked (so a reload restores them) and brought forward when opened again. */
export function trackJobViews(
  app: JupyterFrontEnd,
  jobs: JobsModel,
  stream: StreamClient,
  trans: TranslationBundle
): {
  tracker: WidgetTracker<MainAreaWidget<JobViewContent>>;
  openRun: (run: IRunRef) => void;
} {
  const tracker = new WidgetTracker<MainAreaWidget<JobViewContent>>({
    namespace: 'ranktable-job'
  });
  const openRun = (run: IRunRef): void => {
    const existing = tracker.find(w => w.id === jobViewId(run));
    if (existing) {
      app.shell.activateById(existing.id);
      return;
    }
    const widget = createJobView(run, jobs, stream, trans, openRun);
    // into the shell only once tracked: the shell's layout is saved as the widget enters it, and the
    // restorer names (and so saves) only the widgets its trackers announced; added first, a reload
    // before the next layout change would lose the view
    void tracker.add(widget).then(() => {
      if (!widget.isDisposed) {
        app.shell.add(widget, 'main');
        app.shell.activateById(widget.id);
      }
    });
  };
  return { tracker, openRun };
}
