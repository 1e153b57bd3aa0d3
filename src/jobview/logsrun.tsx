/**
 * "Open logs as a run": log files or folders of the Jupyter root (a download, a colleague's files, a
 * platform's log export) read as one run by the server (`POST /ranktable/logs`), shown as a Job view's
 * Metrics tab is: the diagnosis on top, the plots below. No live job is needed.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { DiagnosisView } from './diagnosis';
import { MetricsView } from './metrics';
import { ILogsRun, fetchLogsRun } from './observe';

/** The files read (name -> rank), the diagnosis, the plots. */
export function LogsRunView(props: { result: ILogsRun; title: string }) {
  const { result } = props;
  const stragglers = result.diagnosis.stragglers.map(s => s.rank);
  return (
    <div className="jp-ranktable-insights jp-ranktable-logsrun">
      <details className="jp-ranktable-logsrun-files">
        <summary>
          {result.files.length} log file(s): {result.source}
        </summary>
        <ul>
          {result.files.slice(0, 200).map(f => (
            <li key={f.name}>
              {f.name} {f.rank === null ? '' : `(rank ${f.rank})`}
            </li>
          ))}
        </ul>
      </details>
      <DiagnosisView diagnosis={result.diagnosis} />
      <MetricsView
        metrics={result.metrics}
        name={props.title}
        stragglers={stragglers.map(rank => ({ rank }))}
      />
    </div>
  );
}

/** Reads the paths (after "Reading…"), then shows them; an error is shown in place. */
function LogsRun(props: { paths: string[]; title: string }) {
  const [result, setResult] = React.useState<ILogsRun | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  React.useEffect(() => {
    let live = true;
    fetchLogsRun(props.paths).then(
      r => live && setResult(r),
      (e: Error) => live && setError(e.message)
    );
    return () => {
      live = false;
    };
  }, [props.paths.join('\n')]);
  if (error) {
    return <div className="jp-ranktable-error">{error}</div>;
  }
  if (!result) {
    return (
      <div className="jp-ranktable-diagnosis">
        Reading {props.paths.join(', ')}…
      </div>
    );
  }
  return <LogsRunView result={result} title={props.title} />;
}

/** Opens a document over the log files and folders at `paths` (relative to the Jupyter root). */
export function logsRunOpener(
  app: JupyterFrontEnd,
  trans: TranslationBundle
): (paths: string[]) => void {
  let count = 0;
  return (paths: string[]) => {
    const title = paths.length === 1 ? paths[0] : `${paths.length} paths`;
    const content = ReactWidget.create(<LogsRun paths={paths} title={title} />);
    const widget = new MainAreaWidget({ content });
    widget.id = `jp-ranktable-logsrun-${++count}`;
    widget.title.label = trans.__('Logs: %1', title);
    widget.title.closable = true;
    app.shell.add(widget, 'main');
    app.shell.activateById(widget.id);
  };
}
