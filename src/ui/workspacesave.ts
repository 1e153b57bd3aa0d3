import { IStateDB } from '@jupyterlab/statedb';
import { ServerConnection } from '@jupyterlab/services';
import { URLExt } from '@jupyterlab/coreutils';

/**
 * On reload or close, the workspace (open documents and their restore data) is written at once. The
 * shell saves its layout a frame after a change and the state plugin writes the workspace 500 ms after
 * the last one (a debounce), so a Job view opened just before a reload could be lost. The body is what
 * the state plugin itself saves (`{data, metadata: {id}}`), sent with `keepalive` so it outlives the page.
 */
export function saveWorkspaceOnUnload(
  state: IStateDB,
  workspace: string,
  /** writes the shell's current layout into `state` first */
  saveLayout: () => Promise<void>,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings(),
  target: Pick<Window, 'addEventListener'> = window
): () => Promise<void> {
  const save = async (): Promise<void> => {
    await saveLayout().catch(() => undefined);
    const data = await state.toJSON();
    const url = URLExt.join(
      settings.baseUrl + settings.appUrl,
      'api/workspaces',
      encodeURIComponent(workspace)
    );
    await ServerConnection.makeRequest(
      url,
      {
        method: 'PUT',
        body: JSON.stringify({ data, metadata: { id: workspace } }),
        keepalive: true
      },
      settings
    );
  };
  target.addEventListener('pagehide', () => void save().catch(() => undefined));
  return save;
}
