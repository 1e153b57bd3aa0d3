import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  Notification,
  WidgetTracker
} from '@jupyterlab/apputils';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { FileDialog, IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { AccordionPanel } from '@lumino/widgets';
import { ReactWidget } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONValue } from '@lumino/coreutils';

import { ranktableIcon } from './icon';
import { IObserveSettings, putObserveSettings } from './observe';
import { registerInsights } from './insights';
import { IKeyValueStore, RanktableModel } from './model';
import { IRunRef, JobsModel } from './models/jobs';
import { RunPickerModel } from './models/runpicker';
import { pickRun } from './runpicker';
import { SyncStatusModel, uploadTargets } from './models/sync';
import { createSyncStatusItem } from './components/syncstatus';
import { JobViewContent, createJobView, jobViewId } from './jobview';
import { LAYOUT_FACTORY, LayoutDocFactory } from './layoutdoc';
import {
  SPEC_FACTORY,
  SPEC_FILE_TYPE,
  SpecEditor,
  SpecEditorFactory
} from './specdoc';
import { SPEC_FILE_EXTENSION, newSpecText } from './specfile';
import { createSidebar } from './sidebar';
import { StreamClient } from './stream';

const PLUGIN_ID = 'jupyter-ranktable:plugin';
const PANEL_ID = 'jp-ranktable-panel';

export namespace CommandIDs {
  export const open = 'ranktable:open';
  export const refreshJobs = 'ranktable:refresh-jobs';
  export const openJob = 'ranktable:open-job';
  export const openLayout = 'ranktable:open-layout';
  export const newSpec = 'ranktable:new-spec';
  export const stopJob = 'ranktable:stop-job';
  export const resubmitJob = 'ranktable:resubmit-job';
  export const openSync = 'ranktable:open-sync';
}

/** Profiles' UI state persists in JupyterLab's state database (per user, server-side). */
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

const TERMINAL = ['Completed', 'Failed', 'Aborted', 'Terminated'];

const PHASE_KIND: Record<string, 'success' | 'error' | 'warning' | 'info'> = {
  Completed: 'success',
  Running: 'info',
  Failed: 'error',
  Aborted: 'warning',
  Terminated: 'warning',
  Restarting: 'warning'
};

/** The job row a context-menu command acts on (the row under the pointer in the sidebar). */
function rowRun(app: JupyterFrontEnd): IRunRef | null {
  const node = app.contextMenuHitTest(n =>
    n.classList.contains('jp-Ranktable-jobRow')
  );
  if (!node?.dataset.job || !node.dataset.uid) {
    return null;
  }
  return {
    namespace: node.dataset.namespace ?? 'default',
    name: node.dataset.job,
    uid: node.dataset.uid
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Ranktable workspace: a sidebar for status; job specs, Job views and rank layouts in the main area.',
  autoStart: true,
  optional: [
    ICommandPalette,
    ILayoutRestorer,
    ISettingRegistry,
    IStateDB,
    ITranslator,
    ILauncher,
    IDefaultFileBrowser,
    IStatusBar,
    IDocumentManager
  ],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null,
    state: IStateDB | null,
    translator: ITranslator | null,
    launcher: ILauncher | null,
    browser: IDefaultFileBrowser | null,
    statusBar: IStatusBar | null,
    docManager: IDocumentManager | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyter-ranktable');
    const stream = new StreamClient();
    const model = new RanktableModel(stream);
    const jobs = new JobsModel(stream);
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
            const observability = (settings.get('observability').composite ??
              {}) as IObserveSettings;
            putObserveSettings(observability).catch(reason =>
              Notification.error(
                trans.__(
                  'Ranktable settings, metrics and triage: %1',
                  String(reason?.message ?? reason)
                ),
                { autoClose: false }
              )
            );
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason =>
          console.warn('jupyter-ranktable: settings not loaded', reason)
        );
    }

    // -- Job views: one per run, tracked and restored after a reload --------------------------------
    const jobViews = new WidgetTracker<MainAreaWidget<JobViewContent>>({
      namespace: 'ranktable-job'
    });
    const openRun = (run: IRunRef): void => {
      const existing = jobViews.find(w => w.id === jobViewId(run));
      if (existing) {
        app.shell.activateById(existing.id);
        return;
      }
      const widget = createJobView(run, jobs, stream, trans, openRun);
      void jobViews.add(widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
    };
    app.commands.addCommand(CommandIDs.openJob, {
      label: args =>
        args.isLauncher
          ? trans.__('Job view')
          : args.fromRow
            ? trans.__('Open Job view')
            : args.name
              ? trans.__('Open Job view of %1', String(args.name))
              : trans.__('Open Job view…'),
      caption: trans.__(
        'Pick a job or an earlier run on the pool and open its Job view'
      ),
      icon: ranktableIcon,
      execute: async args => {
        // the row under the context menu only when run from that menu (the palette opens the picker)
        let run: IRunRef | null = (args.fromRow ? rowRun(app) : null) ?? {
          namespace: String(args.namespace ?? 'default'),
          name: String(args.name ?? ''),
          uid: String(args.uid ?? '')
        };
        if (!run.name) {
          // from the launcher or the palette: pick a job (or an earlier run of one) on the pool
          run = await pickRun(
            new RunPickerModel(() => jobs.seen.values()),
            trans
          );
        }
        if (run?.name && run.uid) {
          openRun(run);
        }
      }
    });
    app.commands.addCommand(CommandIDs.stopJob, {
      label: trans.__('Stop job'),
      execute: async () => {
        const run = rowRun(app);
        if (run) {
          await jobs.stop(run);
        }
      }
    });
    app.commands.addCommand(CommandIDs.resubmitJob, {
      label: trans.__('Resubmit job (new run)'),
      execute: async () => {
        const run = rowRun(app);
        if (run) {
          openRun(await jobs.resubmit(run));
        }
      }
    });
    app.contextMenu.addItem({
      command: CommandIDs.openJob,
      args: { fromRow: true },
      selector: '.jp-Ranktable-jobRow',
      rank: 1
    });
    app.contextMenu.addItem({
      command: CommandIDs.resubmitJob,
      selector: '.jp-Ranktable-jobRow',
      rank: 2
    });
    app.contextMenu.addItem({
      command: CommandIDs.stopJob,
      selector: '.jp-Ranktable-jobRow',
      rank: 3
    });

    // -- Job spec files (*.rtjob.yaml): a form view; "Open With → Editor" edits the same text ---------
    app.docRegistry.addFileType({
      name: SPEC_FILE_TYPE,
      displayName: trans.__('Ranktable job spec'),
      extensions: [SPEC_FILE_EXTENSION],
      mimeTypes: ['text/x-yaml'],
      contentType: 'file',
      fileFormat: 'text',
      icon: ranktableIcon
    });
    const specFactory = new SpecEditorFactory(
      {
        name: SPEC_FACTORY,
        label: trans.__('Ranktable job'),
        modelName: 'text',
        fileTypes: [SPEC_FILE_TYPE],
        defaultFor: [SPEC_FILE_TYPE],
        translator: translator ?? nullTranslator
      },
      jobs,
      trans,
      openRun
    );
    app.docRegistry.addWidgetFactory(specFactory);
    const specs = new WidgetTracker<DocumentWidget<SpecEditor>>({
      namespace: 'ranktable-spec'
    });
    specFactory.widgetCreated.connect((_, widget) => {
      widget.context.pathChanged.connect(() => void specs.save(widget));
      void specs.add(widget);
    });

    // -- Rank layout viewer: "Open With → Rank layout" on a rank-table JSON ----------------------------
    // the topology file picker of the viewer (JupyterLab's file dialog over the Jupyter contents)
    const pickTopology = async (near: string): Promise<string | null> => {
      if (!docManager) {
        return null;
      }
      const picked = await FileDialog.getOpenFiles({
        manager: docManager,
        title: trans.__('Topology file for the Rank layout viewer'),
        label: trans.__(
          'A switch topology in any format `ranktable plan` reads (detected from the content)'
        ),
        defaultPath: near,
        translator: translator ?? nullTranslator
      });
      const file = (picked.value ?? []).find(i => i.type !== 'directory');
      return picked.button.accept && file ? file.path : null;
    };
    const layoutFactory = new LayoutDocFactory(
      {
        name: LAYOUT_FACTORY,
        label: trans.__('Rank layout'),
        modelName: 'text',
        fileTypes: ['json'],
        translator: translator ?? nullTranslator
      },
      trans,
      docManager ? pickTopology : undefined
    );
    app.docRegistry.addWidgetFactory(layoutFactory);
    const layouts = new WidgetTracker<DocumentWidget<ReactWidget>>({
      namespace: 'ranktable-layout'
    });
    layoutFactory.widgetCreated.connect((_, widget) => {
      widget.context.pathChanged.connect(() => void layouts.save(widget));
      void layouts.add(widget);
    });

    app.commands.addCommand(CommandIDs.openLayout, {
      label: args =>
        args.isLauncher
          ? trans.__('Rank layout')
          : trans.__('Open a rank table in the Rank layout viewer…'),
      caption: trans.__(
        'Pick a rank-table JSON file and show its layout on the cluster’s topology or a file’s'
      ),
      icon: ranktableIcon,
      isEnabled: () => !!docManager,
      execute: async args => {
        if (!docManager) {
          return;
        }
        const picked = await FileDialog.getOpenFiles({
          manager: docManager,
          title: trans.__('Open a rank table in the Rank layout viewer'),
          label: trans.__(
            'A rank-table JSON file (hccl.json, ranktable.json…)'
          ),
          defaultPath: String(args.cwd ?? browser?.model.path ?? ''),
          filter: item =>
            item.type === 'directory' || item.name.endsWith('.json')
              ? {}
              : null,
          translator: translator ?? nullTranslator
        });
        const file = (picked.value ?? []).find(
          item => item.type !== 'directory' && item.name.endsWith('.json')
        );
        if (!picked.button.accept || !file) {
          return;
        }
        return app.commands.execute('docmanager:open', {
          path: file.path,
          factory: LAYOUT_FACTORY
        });
      }
    });

    app.commands.addCommand(CommandIDs.newSpec, {
      label: args =>
        args.isLauncher
          ? trans.__('Ranktable job')
          : trans.__('New Ranktable job'),
      caption: trans.__(
        'A job spec file (%1) opened in the form',
        SPEC_FILE_EXTENSION
      ),
      icon: ranktableIcon,
      execute: async args => {
        const cwd = String(args.cwd ?? browser?.model.path ?? '');
        const file = await app.serviceManager.contents.newUntitled({
          path: cwd,
          type: 'file',
          ext: SPEC_FILE_EXTENSION
        });
        await app.serviceManager.contents.save(file.path, {
          type: 'file',
          format: 'text',
          content: newSpecText()
        });
        return app.commands.execute('docmanager:open', {
          path: file.path,
          factory: SPEC_FACTORY
        });
      }
    });
    if (launcher) {
      const category = trans.__('Ranktable');
      const args = { isLauncher: true };
      launcher.add({ command: CommandIDs.newSpec, category, rank: 1, args });
      launcher.add({ command: CommandIDs.openJob, category, rank: 2, args });
      launcher.add({ command: CommandIDs.openLayout, category, rank: 3, args });
    }
    app.contextMenu.addItem({
      command: CommandIDs.newSpec,
      selector: '.jp-DirListing-content',
      rank: 52
    });

    if (restorer) {
      void restorer.restore(jobViews, {
        command: CommandIDs.openJob,
        args: w => ({ ...w.content.run }),
        name: w => w.content.run.uid
      });
      void restorer.restore(specs, {
        command: 'docmanager:open',
        args: w => ({ path: w.context.path, factory: SPEC_FACTORY }),
        name: w => w.context.path
      });
      void restorer.restore(layouts, {
        command: 'docmanager:open',
        args: w => ({ path: w.context.path, factory: LAYOUT_FACTORY }),
        name: w => w.context.path
      });
    }

    // -- the sidebar --------------------------------------------------------------------------------
    const openNotebook = async (kernelName: string): Promise<void> => {
      await app.serviceManager.kernelspecs.refreshSpecs();
      await app.commands.execute('notebook:create-new', { kernelName });
    };
    const panel = createSidebar({
      model,
      jobs,
      trans,
      openRun,
      openNotebook,
      newSpec: () => void app.commands.execute(CommandIDs.newSpec)
    });
    panel.id = PANEL_ID;
    panel.title.icon = ranktableIcon;
    panel.title.caption = trans.__('Ranktable');
    app.shell.add(panel, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(panel, PANEL_ID);
    }

    // a notification whenever a job moves to another phase (one watch for the whole UI)
    jobs.phaseChanged.connect((_, { job, previous }) => {
      // finished and failed jobs are announced by the insights notification, with the diagnosis
      if (!notify || !previous || TERMINAL.includes(job.phase)) {
        return;
      }
      const kind = PHASE_KIND[job.phase] ?? 'info';
      Notification.emit(
        trans.__('Job %1: %2 → %3', job.name, previous, job.phase),
        kind,
        {
          autoClose: kind === 'error' ? false : 6000,
          actions: job.uid
            ? [
                {
                  label: trans.__('Open'),
                  callback: () =>
                    openRun({
                      namespace: job.namespace,
                      name: job.name,
                      uid: job.uid!
                    })
                }
              ]
            : []
        }
      );
    });
    registerInsights(app, jobs, trans, palette); // metrics + diagnosis document, finish/failure notification
    // the Notebook-instance sync state (automatic uploads of saves) in the status bar
    const syncStatus = new SyncStatusModel(stream);
    // a folder newly synced to a profile (or its mode changed, here or elsewhere): the Sync section
    // shows the folder each profile remembers, so the profiles are read again
    let targets = '';
    syncStatus.changed.connect(() => {
      const now = uploadTargets(syncStatus.profiles);
      if (now !== targets) {
        targets = now;
        void model.refreshProfiles().catch(() => undefined);
      }
    });
    app.commands.addCommand(CommandIDs.openSync, {
      label: trans.__('Ranktable: Show sync'),
      execute: () => {
        app.shell.activateById(PANEL_ID);
        void model.refreshProfiles().catch(() => undefined);
        const index = panel.widgets.findIndex(
          w => w.id === 'jp-Ranktable-section-sync'
        );
        const accordion = panel.content as AccordionPanel;
        if (index >= 0 && typeof accordion.expand === 'function') {
          accordion.expand(index);
          // sections are as tall as their content and the panel scrolls: bring Sync's title to the top
          const title = accordion.titles[index];
          requestAnimationFrame(() =>
            title?.scrollIntoView?.({ block: 'start' })
          );
        }
      }
    });
    if (statusBar) {
      statusBar.registerStatusItem('jupyter-ranktable:sync-status', {
        item: createSyncStatusItem(
          syncStatus,
          trans,
          () => void app.commands.execute(CommandIDs.openSync)
        ),
        align: 'left',
        rank: 50,
        isActive: () => syncStatus.summary.state !== 'off',
        activeStateChanged: syncStatus.changed
      });
    }
    void app.restored.then(() => {
      jobs.watch();
      syncStatus.start();
      void model.loadConfig().catch(() => undefined);
    });

    app.commands.addCommand(CommandIDs.open, {
      label: trans.__('Open the Ranktable panel'),
      icon: ranktableIcon,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    app.commands.addCommand(CommandIDs.refreshJobs, {
      label: trans.__('Ranktable: Refresh jobs'),
      execute: () => jobs.refresh()
    });
    if (palette) {
      const category = trans.__('Ranktable');
      for (const command of [
        CommandIDs.open,
        CommandIDs.openJob,
        CommandIDs.openLayout,
        CommandIDs.refreshJobs,
        CommandIDs.newSpec,
        CommandIDs.openSync
      ]) {
        palette.addItem({ command, category });
      }
    }
  }
};

export default plugin;
