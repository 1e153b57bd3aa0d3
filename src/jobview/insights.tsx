/**
 * "Job insights" main-area document: the diagnosis on top (failing rank with its server and leaf), live
 * plots below; plus a notification with the one-line diagnosis when a job finishes or fails.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  MainAreaWidget,
  Notification,
  ReactWidget
} from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { DiagnosisPanel } from './diagnosis';
import { MetricsPanel } from './metrics';
import { JobsModel } from '../jobs/model';
import {
  IDiagnosis,
  IJobRunRef,
  TERMINAL_PHASES,
  fetchDiagnosis,
  noticeText
} from './observe';

/** Diagnosis over plots; the stragglers it finds are drawn and named apart from the band. */
export function JobInsights(props: {
  job: IJobRunRef;
  /** false once the run has ended: its metrics are no longer "live" */
  live?: boolean;
}): JSX.Element {
  type Outlier = { rank: number; server?: string | null };
  const [stragglers, setStragglers] = React.useState<Outlier[]>([]);
  const onLoad = React.useCallback((d: IDiagnosis) => {
    setStragglers(previous => {
      const next = d.stragglers.map(s => ({ rank: s.rank, server: s.server }));
      return JSON.stringify(next) === JSON.stringify(previous)
        ? previous
        : next;
    });
  }, []);
  return (
    <div className="jp-ranktable-insights">
      <DiagnosisPanel job={props.job} onLoad={onLoad} />
      <MetricsPanel job={props.job} stragglers={stragglers} live={props.live} />
    </div>
  );
}

/** Opens the insights document of a run, one per run: an open one is brought forward. */
export function insightsOpener(
  app: JupyterFrontEnd,
  trans: TranslationBundle
): (job: IJobRunRef) => void {
  const open = new Map<string, MainAreaWidget>();
  return (job: IJobRunRef) => {
    const key = `${job.namespace}/${job.name}/${job.run ?? ''}`;
    const existing = open.get(key);
    if (existing && !existing.isDisposed) {
      app.shell.activateById(existing.id);
      return;
    }
    const content = ReactWidget.create(<JobInsights job={job} />);
    const widget = new MainAreaWidget({ content });
    widget.id = `jp-ranktable-insights-${key.replace(/[^\w-]/g, '_')}`;
    widget.title.label = trans.__('%1: metrics and diagnosis', job.name);
    widget.title.closable = true;
    open.set(key, widget);
    app.shell.add(widget, 'main');
    app.shell.activateById(widget.id);
  };
}

/** When a job finishes or fails: the one-line diagnosis, with "Open" (`open` gets the run's reference). */
export function notifyFinishedJobs(
  jobs: JobsModel,
  trans: TranslationBundle,
  open: (ref: { namespace: string; name: string; run: string }) => void
): void {
  jobs.phaseChanged.connect((_, { job, previous }) => {
    if (!previous || !TERMINAL_PHASES.includes(job.phase)) {
      return;
    }
    const ref = { namespace: job.namespace, name: job.name };
    void fetchDiagnosis(ref)
      .catch(() => null)
      .then(diagnosis => {
        const failed =
          job.phase !== 'Completed' || Boolean(diagnosis?.first_failure);
        Notification.emit(
          noticeText(job.name, job.phase, diagnosis),
          failed ? 'error' : 'success',
          {
            autoClose: failed ? false : 8000,
            actions: [
              {
                label: trans.__('Open'),
                callback: () => open({ ...ref, run: diagnosis?.run ?? '' })
              }
            ]
          }
        );
      });
  });
}
