import * as React from 'react';

import { IProfile } from '../connections/model';
import { ProfileSelect } from '../connections/profileselect';
import { useSignal } from '../ui/usesignal';
import { MiddleEllipsis } from '../ui/ellipsis';
import { askDownload, askSyncMode, modeLabel } from './dialogs';
import { IConflict, IProgress, SyncOperations } from './operation';
import {
  ErrorLine,
  Field,
  ISectionProps,
  Section,
  TextField,
  errorText,
  formatBytes,
  formatSeconds,
  useModel,
  NoProfileYet
} from '../ui/common';
import { useWhyNot, WriteButton } from '../permissions/view';

/** The folder shown for a profile: what was typed for it, else the one last synced to it, else the root. */
export function syncFolder(
  profile: IProfile,
  typed: Record<string, string>
): string {
  return typed[profile.name] ?? profile.local_dir ?? '.';
}

export function SyncSection(props: ISectionProps): JSX.Element {
  const { model, trans } = props;
  const readOnly = useWhyNot('write');
  useModel(model);
  const [profile, setProfile] = React.useState('');
  const { current, localDir, setLocalDir } = useSyncFolder(model, profile);
  const ops = React.useMemo(() => new SyncOperations(model.stream), [model]);
  useSignal(ops.changed);
  const { progress, conflicts, running } = ops;
  const [summary, setSummary] = React.useState('');
  const act = useSyncActions({ ...props, ops, current, localDir, setSummary });

  return (
    <Section id="sync" title={trans.__('Sync')} model={model}>
      {model.profiles.length === 0 ? (
        <NoProfileYet trans={trans} />
      ) : (
        <>
          <Field name="sync-profile" label={trans.__('Profile')}>
            <ProfileSelect
              profiles={model.profiles}
              value={current?.name ?? ''}
              onChange={setProfile}
            />
          </Field>
          <TextField
            name="sync-local"
            label={trans.__('Local folder (in the Jupyter root)')}
            value={localDir}
            onChange={setLocalDir}
          />
          <div className="jp-Ranktable-syncLine">
            <span aria-hidden="true">→</span>
            <MiddleEllipsis
              className="jp-Ranktable-syncDest"
              text={`${current?.name ?? ''}:${current?.working_dir ?? current?.remote_dir ?? '~/work'}`}
            />
          </div>
          <div className="jp-Ranktable-syncLine jp-Ranktable-muted">
            {trans.__(
              'Automatic upload: %1',
              modeLabel(trans, current?.sync?.upload ?? 'explicit')
            )}
          </div>
          <SyncButtons
            act={act}
            running={running}
            readOnly={readOnly}
            trans={trans}
          />
          {progress && <UploadProgress progress={progress} trans={trans} />}
          {summary && <div className="jp-Ranktable-ok">{summary}</div>}
          {conflicts.length > 0 && (
            <ConflictList
              conflicts={conflicts}
              trans={trans}
              onDownload={path => void act.resolveByDownload(path)}
              onOverwrite={path => void act.upload([path])}
            />
          )}
          <ErrorLine error={ops.error} />
        </>
      )}
    </Section>
  );
}

interface ISyncTarget extends ISectionProps {
  ops: SyncOperations;
  current: IProfile | undefined;
  localDir: string;
  setSummary: (summary: string) => void;
}

/** The Sync section's actions: upload, download, resolve a conflict, set the upload mode. */
function useSyncActions(target: ISyncTarget) {
  const { model, trans, ops, current, localDir, setSummary } = target;
  const failed = (e: unknown): void => ops.fail(errorText(e));

  const upload = async (force: string[] = []): Promise<void> => {
    if (!current) {
      return;
    }
    setSummary('');
    const body = { profile: current.name, local_dir: localDir, force };
    await ops
      .upload(body, result => {
        setSummary(
          trans.__(
            '%1 uploaded, %2 unchanged, %3 conflicts',
            result.uploaded,
            result.unchanged,
            result.conflicts.length
          )
        );
        if (force.length) {
          ops.dropConflicts(path => force.includes(path));
        }
        // the server now remembers this folder for the profile (automatic uploads start from it)
        void model.refreshProfiles().catch(() => undefined);
      })
      .catch(failed);
  };

  const download = async (remote: string, local: string): Promise<void> => {
    if (!current) {
      return;
    }
    const body = {
      profile: current.name,
      remote_path: remote,
      local_path: local
    };
    await ops
      .download(body, result => {
        setSummary(
          trans.__(
            'Downloaded %1 file(s) to %2',
            result.files,
            result.local_path
          )
        );
        ops.dropConflicts(path => path === remote);
      })
      .catch(failed);
  };

  /** Take the remote's version of a conflicting file (recorded, so the next sync is clean). */
  const resolveByDownload = async (conflict: string): Promise<void> => {
    if (!current) {
      return;
    }
    const body = { profile: current.name, local_dir: localDir, conflict };
    await ops
      .download(body, result => {
        setSummary(
          trans.__('Took the remote version of %1', result.local_path)
        );
        ops.dropConflicts(path => path === conflict);
      })
      .catch(failed);
  };

  /** Ask for the automatic upload's mode and set it for the profile (and its folder). */
  const chooseMode = async (): Promise<void> => {
    const mode = await askSyncMode(trans, current?.sync?.upload ?? 'explicit');
    if (mode && current) {
      await model
        .setSyncMode(current.name, mode, localDir)
        .catch(e => ops.fail(errorText(e)));
    }
  };

  return { upload, download, resolveByDownload, chooseMode };
}

/** Upload now, Download… and Settings… (the automatic upload's mode). */
function SyncButtons(props: {
  act: ReturnType<typeof useSyncActions>;
  running: boolean;
  readOnly: string;
  trans: ISectionProps['trans'];
}): JSX.Element {
  const { act, running, readOnly, trans } = props;
  return (
    <div className="jp-Ranktable-actions">
      <WriteButton
        className="jp-mod-styled jp-mod-accept"
        whyNot={readOnly}
        busy={running}
        onClick={() => void act.upload()}
      >
        {trans.__('Upload now')}
      </WriteButton>
      <button
        className="jp-mod-styled"
        disabled={running}
        title={trans.__('Download a remote file or folder')}
        onClick={() =>
          void askDownload(trans).then(
            d => d && act.download(d.remote, d.local)
          )
        }
      >
        {trans.__('Download…')}
      </button>
      <button
        className="jp-mod-styled"
        title={trans.__('When saves are uploaded')}
        onClick={() => void act.chooseMode()}
      >
        {trans.__('Settings…')}
      </button>
    </div>
  );
}

/** A transfer's bar and figures. */
function UploadProgress(props: {
  progress: IProgress;
  trans: ISectionProps['trans'];
}): JSX.Element {
  const { progress, trans } = props;
  const pct = progress.bytes_total
    ? (100 * progress.bytes_done) / progress.bytes_total
    : 0;
  return (
    <div className="jp-Ranktable-progress" aria-live="polite">
      <progress
        max={100}
        value={pct}
        aria-label={trans.__('Upload progress')}
      />
      <div className="jp-Ranktable-muted">
        {trans.__(
          '%1/%2 files · %3 of %4 · %5/s · ETA %6',
          progress.files_done,
          progress.files_total,
          formatBytes(progress.bytes_done),
          formatBytes(progress.bytes_total),
          formatBytes(progress.rate),
          formatSeconds(progress.eta)
        )}
      </div>
    </div>
  );
}

/** Files changed on the instance since the last upload: take the remote's, or overwrite it. */
function ConflictList(props: {
  conflicts: IConflict[];
  trans: ISectionProps['trans'];
  onDownload: (path: string) => void;
  onOverwrite: (path: string) => void;
}): JSX.Element {
  const { conflicts, trans } = props;
  const readOnly = useWhyNot('write');
  return (
    <div className="jp-Ranktable-conflicts">
      <h4>{trans.__('Changed on the remote since the last upload')}</h4>
      <ul>
        {conflicts.map(c => (
          <li key={c.path} data-conflict={c.path}>
            <code>{c.path}</code>{' '}
            <span className="jp-Ranktable-muted">{c.reason}</span>
            <div className="jp-Ranktable-actions">
              <WriteButton
                className="jp-mod-styled"
                whyNot={readOnly}
                onClick={() => props.onDownload(c.path)}
              >
                {trans.__('Download')}
              </WriteButton>
              <WriteButton
                className="jp-mod-styled jp-mod-warn"
                whyNot={readOnly}
                onClick={() => props.onOverwrite(c.path)}
              >
                {trans.__('Overwrite')}
              </WriteButton>
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The chosen profile (else the first) and the folder shown for it, as typed or as last synced. */
function useSyncFolder(model: ISectionProps['model'], profile: string) {
  /** Folders typed in this session, per profile (until then, the folder the server remembers). */
  const [typed, setTyped] = React.useState<Record<string, string>>({});
  const current =
    model.profiles.find(p => p.name === profile) ?? model.profiles[0];
  const localDir = current ? syncFolder(current, typed) : '.';
  const setLocalDir = (value: string): void => {
    if (current) {
      setTyped(t => ({ ...t, [current.name]: value }));
    }
  };
  return { current, localDir, setLocalDir };
}
