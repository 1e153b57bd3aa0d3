/**
 * The plugin: builds the models, documents, sidebar and status item, then wires them together; every
 * command and menu lives in commands.ts, every feature in its folder.
 */
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  LayoutRestorer,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  IWindowResolver,
  MainAreaWidget,
  Notification,
  WidgetTracker
} from '@jupyterlab/apputils';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { ReactWidget, SidePanel } from '@jupyterlab/ui-components';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { IStatusBar } from '@jupyterlab/statusbar';
import {
  ITranslator,
  TranslationBundle,
  nullTranslator
} from '@jupyterlab/translation';

import { StreamClient } from './api/client';
import { CommandIDs, ICommandContext, addCommandsAndMenus } from './commands';
import { RanktableModel } from './connections/model';
import { IRunRef, JobsModel } from './jobs/model';
import {
  notifyFailing,
  notifyPhaseChanges,
  notifyRecovery
} from './jobs/notify';
import { RecoveryModel } from './jobs/recovery';
import { insightsOpener, notifyFinishedJobs } from './jobview/insights';
import { logsRunOpener } from './jobview/logsrun';
import {
  IObserveSettings,
  loadObserveSettings,
  putObserveSettings
} from './jobview/observe';
import { trackJobViews } from './jobview/tracker';
import { JobViewContent } from './jobview/view';
import { registerLayoutDocuments } from './layout/documents';
import { LAYOUT_FACTORY } from './layout/view';
import { createSidebar } from './sidebar';
import { registerSpecDocuments } from './spec/documents';
import { SPEC_FACTORY, SpecEditor } from './spec/view';
import { SyncStatusModel, uploadTargets } from './sync/model';
import { createSyncStatusItem } from './sync/status';
import { ranktableIcon } from './ui/icon';
import { StateStore } from './ui/statestore';
import { saveWorkspaceOnUnload } from './ui/workspacesave';

export { CommandIDs };

const PLUGIN_ID = 'jupyter-ranktable:plugin';
const PANEL_ID = 'jp-ranktable-panel';

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
    IDocumentManager,
    IWindowResolver
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
    docManager: IDocumentManager | null,
    resolver: IWindowResolver | null
  ) => {
    translator = translator ?? nullTranslator;
    const trans = translator.load('jupyter-ranktable');
    const stream = new StreamClient();
    const model = new RanktableModel(stream);
    const jobs = new JobsModel(stream);
    if (state) {
      model.store = new StateStore(state, PLUGIN_ID);
    }
    const settings = loadSettings(settingRegistry, trans);
    const jobViews = trackJobViews(app, jobs, stream, trans);
    const openRun = jobViews.openRun;
    const specs = registerSpecDocuments(app, jobs, trans, translator, openRun);
    const layouts = registerLayoutDocuments(app, trans, translator, docManager);

    const panel = addSidebar(app, model, jobs, trans, openRun);

    const context: ICommandContext = {
      app,
      trans,
      translator,
      model,
      jobs,
      panel,
      openRun,
      openInsights: insightsOpener(app, trans),
      openLogsRun: logsRunOpener(app, trans),
      browser,
      docManager
    };
    addCommandsAndMenus(context, palette, launcher);
    if (restorer) {
      restorer.add(panel, PANEL_ID);
      restoreDocuments(restorer, jobViews.tracker, specs, layouts);
      if (state && resolver) {
        saveLayoutOnUnload(app, restorer, state, resolver);
      }
    }

    notifyPhaseChanges(jobs, trans, openRun, () => settings.notify);
    notifyFailing(jobs, trans, openRun, () => settings.notify);
    notifyRecovery(new RecoveryModel(), trans, openRun); // auto-resume decisions (when the server has it on)
    // metrics + diagnosis document, finish/failure notification
    notifyFinishedJobs(jobs, trans, ref => {
      void app.commands.execute(CommandIDs.openInsights, ref);
    });
    const syncStatus = showSyncStatus(app, model, stream, trans, statusBar);
    void app.restored.then(() => {
      jobs.watch();
      syncStatus.start();
      void model.loadConfig().catch(() => undefined);
    });
  }
};

/** The sidebar, built and added to the left of the shell. */
function addSidebar(
  app: JupyterFrontEnd,
  model: RanktableModel,
  jobs: JobsModel,
  trans: TranslationBundle,
  openRun: (run: IRunRef) => void
): SidePanel {
  const panel = createSidebar({
    model,
    jobs,
    trans,
    openRun,
    openNotebook: async (kernelName: string) => {
      await app.serviceManager.kernelspecs.refreshSpecs();
      await app.commands.execute('notebook:create-new', { kernelName });
    },
    newSpec: () => void app.commands.execute(CommandIDs.newSpec)
  });
  panel.id = PANEL_ID;
  panel.title.icon = ranktableIcon;
  panel.title.caption = trans.__('Ranktable');
  app.shell.add(panel, 'left', { rank: 600 });
  return panel;
}

/** The workspace's layout is saved when the page unloads (the next load restores it). */
function saveLayoutOnUnload(
  app: JupyterFrontEnd,
  restorer: ILayoutRestorer,
  state: IStateDB,
  resolver: IWindowResolver
): void {
  // the restorer class (not its token's interface) saves a layout: duck-typed
  const shell = app.shell as unknown as Partial<ILabShell>;
  const layoutRestorer = restorer as Partial<Pick<LayoutRestorer, 'save'>>;
  saveWorkspaceOnUnload(state, resolver.name, async () => {
    if (shell.saveLayout && layoutRestorer.save) {
      await layoutRestorer.save(shell.saveLayout());
    }
  });
}

/** Job views, spec documents and layouts open at the last reload open again. */
function restoreDocuments(
  restorer: ILayoutRestorer,
  jobViews: WidgetTracker<MainAreaWidget<JobViewContent>>,
  specs: WidgetTracker<DocumentWidget<SpecEditor>>,
  layouts: WidgetTracker<DocumentWidget<ReactWidget>>
): void {
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

/** The plugin's settings: phase notifications (read on each change), observability (sent to the server). */
function loadSettings(
  settingRegistry: ISettingRegistry | null,
  trans: TranslationBundle
): { notify: boolean } {
  const current = { notify: true };
  if (!settingRegistry) {
    return current;
  }
  void settingRegistry
    .load(PLUGIN_ID)
    .then(settings => {
      // at load only what differs from the server's is sent (nothing, usually): a page load writes nothing
      const apply = (atLoad: boolean) => {
        current.notify = settings.get('notifyPhaseChanges').composite !== false;
        const observability = (settings.get('observability').composite ??
          {}) as IObserveSettings;
        const send = atLoad ? loadObserveSettings : putObserveSettings;
        send(observability).catch(reason =>
          Notification.error(
            trans.__(
              'Ranktable settings, metrics and triage: %1',
              String(reason?.message ?? reason)
            ),
            { autoClose: false }
          )
        );
      };
      apply(true);
      settings.changed.connect(() => apply(false));
    })
    .catch(reason =>
      console.warn('jupyter-ranktable: settings not loaded', reason)
    );
  return current;
}

/** The Notebook-instance sync state (automatic uploads of saves) in the status bar. */
function showSyncStatus(
  app: JupyterFrontEnd,
  model: RanktableModel,
  stream: StreamClient,
  trans: TranslationBundle,
  statusBar: IStatusBar | null
): SyncStatusModel {
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
  return syncStatus;
}

export default plugin;
