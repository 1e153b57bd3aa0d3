import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { ReadonlyPartialJSONValue } from '@lumino/coreutils';

import { ranktableIcon } from './icon';
import { registerInsights } from './insights';
import { IKeyValueStore, RanktableModel, SectionId } from './model';
import { RanktablePanel } from './panel';

const PLUGIN_ID = 'jupyter-ranktable:plugin';
const PANEL_ID = 'jp-ranktable-panel';

export namespace CommandIDs {
  export const open = 'ranktable:open';
  export const show = 'ranktable:show';
  export const refreshJobs = 'ranktable:refresh-jobs';
}

/** Templates and saved versions persist in JupyterLab's state database (per user, server-side). */
class StateStore implements IKeyValueStore {
  constructor(private _db: IStateDB) {}
  async load<T>(key: string): Promise<T | undefined> {
    const value = await this._db.fetch(`${PLUGIN_ID}:${key}`);
    return (value ?? undefined) as T | undefined;
  }
  async save(key: string, value: unknown): Promise<void> {
    await this._db.save(
      `${PLUGIN_ID}:${key}`,
      value as ReadonlyPartialJSONValue
    );
  }
}

const PHASE_KIND: Record<string, 'success' | 'error' | 'warning' | 'info'> = {
  Completed: 'success',
  Running: 'info',
  Failed: 'error',
  Aborted: 'warning',
  Terminated: 'warning',
  Restarting: 'warning'
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Ranktable sidebar: SSH profiles and sync, job composer, rank layouts, live jobs and logs.',
  autoStart: true,
  optional: [
    ICommandPalette,
    ILayoutRestorer,
    ISettingRegistry,
    IStateDB,
    ITranslator
  ],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null,
    state: IStateDB | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyter-ranktable');
    const model = new RanktableModel();
    if (state) {
      model.store = new StateStore(state);
    }
    let notify = true;
    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = () => {
            notify = settings.get('notifyPhaseChanges').composite !== false;
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason =>
          console.warn('jupyter-ranktable: settings not loaded', reason)
        );
    }

    const openNotebook = async (kernelName: string): Promise<void> => {
      await app.serviceManager.kernelspecs.refreshSpecs();
      await app.commands.execute('notebook:create-new', { kernelName });
    };

    const panel = new RanktablePanel(model, trans, openNotebook);
    panel.id = PANEL_ID;
    panel.title.icon = ranktableIcon;
    panel.title.caption = trans.__('Ranktable');
    app.shell.add(panel, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(panel, PANEL_ID);
    }

    // a notification whenever a job moves to another phase (one watch for the whole UI)
    model.phaseChanged.connect((_, { job, previous }) => {
      if (!notify || !previous) {
        return;
      }
      const kind = PHASE_KIND[job.phase] ?? 'info';
      Notification.emit(
        trans.__('Job %1: %2 → %3', job.name, previous, job.phase),
        kind,
        {
          autoClose: kind === 'error' ? false : 6000,
          actions: [
            {
              label: trans.__('Show'),
              callback: () => {
                model.logsJob = job;
                app.shell.activateById(PANEL_ID);
                model.show('jobs');
              }
            }
          ]
        }
      );
    });
    registerInsights(app, model, trans, palette); // metrics + diagnosis document, finish/failure notification
    app.restored.then(() => {
      model.watchJobs();
      void model.loadConfig().catch(() => undefined);
    });

    const sections: Record<SectionId, string> = {
      connections: trans.__('Connections'),
      sync: trans.__('Sync'),
      compose: trans.__('Compose'),
      layout: trans.__('Layout'),
      jobs: trans.__('Jobs'),
      logs: trans.__('Logs'),
      kernels: trans.__('Remote kernels')
    };
    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Open the Ranktable panel'),
      icon: ranktableIcon,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    app.commands.addCommand(CommandIDs.show, {
      label: args =>
        trans.__(
          'Ranktable: %1',
          sections[(args.section as SectionId) ?? 'jobs'] ?? ''
        ),
      execute: args => {
        app.shell.activateById(PANEL_ID);
        model.show((args.section as SectionId) ?? 'jobs');
      }
    });
    app.commands.addCommand(CommandIDs.refreshJobs, {
      label: trans.__('Ranktable: Refresh jobs'),
      execute: () => model.refreshJobs()
    });
    if (palette) {
      const category = trans.__('Ranktable');
      palette.addItem({ command: CommandIDs.open, category });
      for (const section of Object.keys(sections)) {
        palette.addItem({
          command: CommandIDs.show,
          category,
          args: { section }
        });
      }
      palette.addItem({ command: CommandIDs.refreshJobs, category });
    }
  }
};

export default plugin;
