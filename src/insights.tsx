/**
 * "Job insights" main-area document: the diagnosis on top (failing rank with its server and leaf), live
 * plots below; plus a notification with the one-line diagnosis when a job finishes or fails.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  ICommandPalette,
  InputDialog,
  MainAreaWidget,
  Notification,
  ReactWidget
} from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { DiagnosisPanel } from './components/diagnosis';
import { MetricsPanel } from './components/metrics';
import { JobsModel } from './models/jobs';
import {
  IDiagnosis,
  IJobRunRef,
  TERMINAL_PHASES,
  fetchDiagnosis,
  noticeText
} from './observe';

export const OPEN_INSIGHTS = 'ranktable:open-job-insights';

/** Diagnosis over plots; the stragglers it finds are drawn in red. */
export function JobInsights(props: { job: IJobRunRef }): JSX.Element {
  const [stragglers, setStragglers] = React.useState<number[]>([]);
  const onLoad = React.useCallback((d: IDiagnosis) => {
    setStragglers(previous => {
      const next = d.stragglers.map(s => s.rank);
      return next.join(',') === previous.join(',') ? previous : next;
    });
  }, []);
  return (
    <div className="jp-ranktable-insights">
      <DiagnosisPanel job={props.job} onLoad={onLoad} />
      <MetricsPanel job={props.job} stragglers={stragglers} />
    </div>
  );
}

export function registerInsights(
  app: JupyterFrontEnd,
  jobs: JobsModel,
  trans: TranslationBundle,
  palette?: ICommandPalette | null
): void {
  const open = new Map<string, MainAreaWidget>();
  app.commands.addCommand(OPEN_INSIGHTS, {
    label: args =>
      trans.__(
        'Ranktable: metrics and diagnosis of %1',
        String(args.name ?? 'a job')
      ),
    execute: async args => {
      if (!args.name) {
        // from the palette: pick one of the jobs the panel knows
        const names = jobs.jobs.map(j => `${j.namespace}/${j.name}`);
        const picked = await InputDialog.getItem({
          title: trans.__('Metrics and diagnosis of'),
          items: names.length ? names : ['default/'],
          editable: true
        });
        if (!picked.button.accept || !picked.value) {
          return;
        }
        const [namespace, name] = picked.value.includes('/')
          ? picked.value.split('/', 2)
          : ['default', picked.value];
        args = { namespace, name };
      }
      const job: IJobRunRef = {
        namespace: String(args.namespace ?? 'default'),
        name: String(args.name ?? ''),
        run: args.run ? String(args.run) : undefined
      };
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
    }
  });

  palette?.addItem({ command: OPEN_INSIGHTS, category: trans.__('Ranktable') });

  // when a job finishes or fails: the one-line diagnosis, with "Open"
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
                callback: () =>
                  void app.commands.execute(OPEN_INSIGHTS, {
                    ...ref,
                    run: diagnosis?.run ?? ''
                  })
              }
            ]
          }
        );
      });
  });
}
