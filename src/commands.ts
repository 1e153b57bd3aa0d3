/**
 * Every command, context-menu item, launcher card and palette entry of the extension (as jupyterlab-git's
 * commandsAndMenu): index.ts builds the models and documents, then hands them here.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  ICommandPalette,
  InputDialog,
  Notification
} from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { FileDialog, IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import type { Contents } from '@jupyterlab/services';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { SidePanel } from '@jupyterlab/ui-components';
import { AccordionPanel } from '@lumino/widgets';
import { stoppedNotice } from './jobs/settle';

import { RanktableModel } from './connections/model';
import { confirmResubmit, confirmStop } from './jobs/confirm';
import { IRunRef, JobsModel } from './jobs/model';
import { RunPickerModel } from './jobs/runpicker';
import { pickRun } from './jobs/runpickerview';
import { IJobRunRef } from './jobview/observe';
import { LAYOUT_FACTORY } from './layout/view';
import {
  SPEC_FILE_EXTENSION,
  newSpecDefaults,
  newSpecText
} from './spec/specfile';
import { SPEC_FACTORY } from './spec/view';
import {
  jobSpecIcon,
  jobViewIcon,
  rankLayoutIcon,
  ranktableIcon
} from './ui/icon';

export namespace CommandIDs {
  export const open = 'ranktable:open';
  export const refreshJobs = 'ranktable:refresh-jobs';
  export const openJob = 'ranktable:open-job';
  export const openLayout = 'ranktable:open-layout';
  export const newSpec = 'ranktable:new-spec';
  export const stopJob = 'ranktable:stop-job';
  export const resubmitJob = 'ranktable:resubmit-job';
  export const openSync = 'ranktable:open-sync';
  export const openInsights = 'ranktable:open-job-insights';
  export const openLogsRun = 'ranktable:open-logs-as-run';
}

/** What the commands act on, built by the plugin's activate. */
export interface ICommandContext {
  app: JupyterFrontEnd;
  trans: TranslationBundle;
  translator: ITranslator;
  model: RanktableModel;
  jobs: JobsModel;
  /** The sidebar (its id is the one `open` and `openSync` activate). */
  panel: SidePanel;
  openRun: (run: IRunRef) => void;
  openInsights: (job: IJobRunRef) => void;
  /** A document over log files and folders of the Jupyter root, read as one run. */
  openLogsRun: (paths: string[]) => void;
  browser: IDefaultFileBrowser | null;
  docManager: IDocumentManager | null;
}

/** Register every command, then the menus, launcher cards and palette entries that run them. */
export function addCommandsAndMenus(
  ctx: ICommandContext,
  palette: ICommandPalette | null,
  launcher: ILauncher | null
): void {
  addJobCommands(ctx);
  addDocumentCommands(ctx);
  addPanelCommands(ctx);
  addInsightsCommand(ctx);
  addContextMenus(ctx.app);
  if (launcher) {
    const category = ctx.trans.__('Ranktable');
    const args = { isLauncher: true };
    launcher.add({ command: CommandIDs.newSpec, category, rank: 1, args });
    launcher.add({ command: CommandIDs.openJob, category, rank: 2, args });
    launcher.add({ command: CommandIDs.openLayout, category, rank: 3, args });
  }
  if (palette) {
    const category = ctx.trans.__('Ranktable');
    for (const command of [
      CommandIDs.openInsights,
      CommandIDs.openLogsRun,
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

function addJobCommands(ctx: ICommandContext): void {
  const { app, trans, jobs, openRun } = ctx;
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
    icon: jobViewIcon,
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
      if (run && (await confirmStop(trans, run))) {
        const stopped = await jobs.stop(run);
        const notice = stoppedNotice(stopped.logs);
        if (notice) {
          Notification.info(notice, { autoClose: 8000 });
        }
      }
    }
  });
  app.commands.addCommand(CommandIDs.resubmitJob, {
    label: trans.__('Resubmit job (new run)'),
    execute: async () => {
      const run = rowRun(app);
      const current = run ? jobs.find(run.namespace, run.name) : undefined;
      if (run && (await confirmResubmit(trans, run, current))) {
        openRun(await jobs.resubmit(run));
      }
    }
  });
  app.commands.addCommand(CommandIDs.refreshJobs, {
    label: trans.__('Ranktable: Refresh jobs'),
    execute: () => jobs.refresh()
  });
}

function addContextMenus(app: JupyterFrontEnd): void {
  const row = '.jp-Ranktable-jobRow';
  app.contextMenu.addItem({
    command: CommandIDs.openJob,
    args: { fromRow: true },
    selector: row,
    rank: 1
  });
  app.contextMenu.addItem({
    command: CommandIDs.resubmitJob,
    selector: row,
    rank: 2
  });
  app.contextMenu.addItem({
    command: CommandIDs.stopJob,
    selector: row,
    rank: 3
  });
  app.contextMenu.addItem({
    command: CommandIDs.newSpec,
    selector: '.jp-DirListing-content',
    rank: 52
  });
  app.contextMenu.addItem({
    command: CommandIDs.openLogsRun,
    args: { fromBrowser: true },
    selector: '.jp-DirListing-item',
    rank: 53
  });
}

function addDocumentCommands(ctx: ICommandContext): void {
  const { app, trans, browser } = ctx;
  app.commands.addCommand(CommandIDs.openLayout, {
    label: args =>
      args.isLauncher
        ? trans.__('Rank layout')
        : trans.__('Open a rank table in the Rank layout viewer…'),
    caption: trans.__(
      'Pick a rank-table JSON file and show its layout on the cluster’s topology or a file’s'
    ),
    icon: rankLayoutIcon,
    isEnabled: () => !!ctx.docManager,
    execute: async args => {
      const path = await pickRankTable(
        ctx,
        String(args.cwd ?? browser?.model.path ?? '')
      );
      if (path) {
        return app.commands.execute('docmanager:open', {
          path,
          factory: LAYOUT_FACTORY
        });
      }
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
    icon: jobSpecIcon,
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
        // from the last job's image and the profile's shared folder: no issue the form made itself
        content: newSpecText(
          'my-job',
          newSpecDefaults(ctx.jobs.jobs, ctx.model.profiles)
        )
      });
      return app.commands.execute('docmanager:open', {
        path: file.path,
        factory: SPEC_FACTORY
      });
    }
  });
}

/** JupyterLab's file dialog over the Jupyter contents: the items picked (none when cancelled, or with no
 * document manager). */
async function pickFiles(
  ctx: ICommandContext,
  options: Pick<
    FileDialog.IFileOptions,
    'title' | 'label' | 'defaultPath' | 'filter'
  >
): Promise<Contents.IModel[]> {
  const { docManager, translator } = ctx;
  if (!docManager) {
    return [];
  }
  const picked = await FileDialog.getOpenFiles({
    manager: docManager,
    ...options,
    translator
  });
  return picked.button.accept ? (picked.value ?? []) : [];
}

/** A rank-table JSON file to open, picked in a file dialog showing folders and JSON files only. */
async function pickRankTable(
  ctx: ICommandContext,
  near: string
): Promise<string | null> {
  const { trans } = ctx;
  const picked = await pickFiles(ctx, {
    title: trans.__('Open a rank table in the Rank layout viewer'),
    label: trans.__('A rank-table JSON file (hccl.json, ranktable.json…)'),
    defaultPath: near,
    filter: item =>
      item.type === 'directory' || item.name.endsWith('.json') ? {} : null
  });
  const file = picked.find(
    item => item.type !== 'directory' && item.name.endsWith('.json')
  );
  return file ? file.path : null;
}

/** The log files and folders to read as one run, picked in a file dialog. */
async function pickLogs(ctx: ICommandContext, near: string): Promise<string[]> {
  const { trans } = ctx;
  const picked = await pickFiles(ctx, {
    title: trans.__('Open logs as a run'),
    label: trans.__(
      'Log files or folders (rank_0.log, worker_3.log…) or a .tar export'
    ),
    defaultPath: near
  });
  return picked.map(item => item.path);
}

function addPanelCommands(ctx: ICommandContext): void {
  const { app, trans, model, panel } = ctx;
  app.commands.addCommand(CommandIDs.open, {
    label: trans.__('Open the Ranktable panel'),
    icon: ranktableIcon,
    execute: () => app.shell.activateById(panel.id)
  });
  app.commands.addCommand(CommandIDs.openSync, {
    label: trans.__('Ranktable: Show sync'),
    execute: () => {
      app.shell.activateById(panel.id);
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
}

function addInsightsCommand(ctx: ICommandContext): void {
  const { app, trans, jobs, browser } = ctx;
  app.commands.addCommand(CommandIDs.openLogsRun, {
    label: args =>
      args.fromBrowser
        ? trans.__('Open logs as a run')
        : trans.__('Ranktable: Open logs as a run…'),
    caption: trans.__(
      'Diagnosis and metrics of log files or folders (a file per rank or pod), no live job needed'
    ),
    icon: ranktableIcon,
    execute: async args => {
      let paths = Array.isArray(args.paths) ? args.paths.map(String) : [];
      if (!paths.length && args.fromBrowser && browser) {
        paths = Array.from(browser.selectedItems()).map(item => item.path);
      }
      if (!paths.length) {
        paths = await pickLogs(ctx, String(browser?.model.path ?? ''));
      }
      if (paths.length) {
        ctx.openLogsRun(paths);
      }
    }
  });
  app.commands.addCommand(CommandIDs.openInsights, {
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
      ctx.openInsights({
        namespace: String(args.namespace ?? 'default'),
        name: String(args.name ?? ''),
        run: args.run ? String(args.run) : undefined
      });
    }
  });
}
