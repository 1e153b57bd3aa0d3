/**
 * The panel's screens as a JupyterLab user sees them (1440x900, sidebar at 250 px), in the light and the
 * dark theme: the job form, the sidebar and each Job view tab are compared with committed baselines
 * (tests/screens.spec.ts-snapshots/, `--update-snapshots` rewrites them), checked by axe-core for serious
 * accessibility violations, and written to docs/img under `make screenshots` (#31.6).
 */
import AxeBuilder from '@axe-core/playwright';
import { expect, test } from '@jupyterlab/galata';
import type { IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import {
  TRAIN,
  WORKSPACE_PAGE,
  openSidebar,
  shoot,
  stopAll,
  submitSpec
} from './fixtures';

test.use({ autoGoto: true, ...WORKSPACE_PAGE });

const TABS = ['Overview', 'Logs', 'Metrics', 'Layout', 'Events'];
/** Pixels allowed to differ: fonts antialias differently from run to run; a layout change moves far more. */
const SAME = { maxDiffPixelRatio: 0.02, animations: 'disabled' as const };

/** Serious and critical axe-core violations inside `selector` (WCAG 2 A/AA rules), as readable lines. */
async function serious(
  page: IJupyterLabPageFixture,
  selector: string
): Promise<string[]> {
  const result = await new AxeBuilder({ page })
    .include(selector)
    // JupyterLab's own ToolbarButton (a <jp-button> with aria-disabled): upstream, in every JupyterLab toolbar
    .exclude('.jp-ToolbarButtonComponent')
    .withTags(['wcag2a', 'wcag2aa'])
    .analyze();
  return result.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(
      v =>
        `${v.id} (${v.impact}): ${v.nodes
          .slice(0, 3)
          .map(n => n.target.join(' '))
          .join('; ')}`
    );
}

/** What changes from run to run (ages, run ids, times, paths): hidden in the comparison. */
function moving(root: Locator): Locator[] {
  return [
    root.locator('.jp-Ranktable-muted'),
    root.locator('.jp-Ranktable-timeline'),
    root.locator('.jp-Ranktable-logPane > :not(.jp-Ranktable-logToolbar)'),
    root.locator('.jp-Ranktable-events'),
    root.locator('.jp-ranktable-chart svg'),
    root.locator('.jp-Ranktable-yaml'),
    root.locator('input')
  ];
}

for (const theme of ['light', 'dark'] as const) {
  test(`the ${theme} theme: sidebar, job form and each Job view tab match their baselines, no serious axe violation`, async ({
    page,
    request
  }) => {
    test.setTimeout(300 * 1000);
    await stopAll(request); // the pictures show this test's job alone
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    const name = `screens-${theme}`;
    const run = await submitSpec(request, {
      name,
      entry: {
        script: TRAIN,
        args: [
          '--steps',
          '40',
          '--interval',
          '0.05',
          '--slow-rank',
          '5',
          '--slow-factor',
          '3'
        ]
      }
    });
    const problems: Record<string, string[]> = {};
    try {
      // the sidebar at 250 px
      const panel = await openSidebar(page);
      const row = panel.locator(`.jp-Ranktable-jobRow[data-uid="${run.uid}"]`);
      await expect(row).toContainText('Completed', { timeout: 120000 });
      await expect(panel).toHaveScreenshot(`sidebar-${theme}.png`, {
        ...SAME,
        mask: moving(panel)
      });
      await shoot(panel, `sidebar-${theme}`);
      problems.sidebar = await serious(page, '#jp-ranktable-panel');

      // a new job's form starts from the last job's image: valid, no issue before anything is typed
      await page.evaluate(async () => {
        await window.jupyterapp.commands.execute('ranktable:new-spec', {
          cwd: ''
        });
      });
      const form = page.locator('.jp-Ranktable-specEditor').last();
      await expect(form.locator('#root_image')).toHaveValue(
        'bert_pretrain_mindspore:v1'
      );
      await expect(form.getByText('valid', { exact: true })).toBeVisible({
        timeout: 30000
      });
      await expect(form.locator('[class^="jp-Ranktable-issue-"]')).toHaveCount(
        0
      );
      // the live preview places the job at once (where depends on the pool's other jobs: masked)
      const planned = form.getByRole('region', { name: 'Planned layout' });
      await expect(planned.locator('.jp-Ranktable-placement')).toBeVisible({
        timeout: 60000
      });
      await expect(form).toHaveScreenshot(`form-${theme}.png`, {
        ...SAME,
        mask: [...moving(form), planned.locator(':scope > :not(h3)')]
      });
      await shoot(form, `form-${theme}`);
      problems.form = await serious(page, '.jp-Ranktable-specEditor');

      // each tab of the finished run's Job view
      await row.click();
      const view = page.locator(`#ranktable-job-${run.uid}`);
      await expect(view).toBeVisible();
      for (const tab of TABS) {
        await view.getByRole('tab', { name: tab }).click();
        const body = view.locator('.jp-Ranktable-tabBody');
        if (tab === 'Logs') {
          await expect(
            view.locator('.jp-Ranktable-logLine').first()
          ).toBeVisible({ timeout: 60000 });
        } else if (tab === 'Metrics') {
          await expect(
            view.locator('.jp-ranktable-median').first()
          ).toBeVisible({
            timeout: 60000
          });
        } else {
          await expect(body).not.toBeEmpty();
        }
        await page.waitForLoadState('networkidle');
        const key = `job-${tab.toLowerCase()}-${theme}`;
        await expect(view).toHaveScreenshot(`${key}.png`, {
          ...SAME,
          mask: moving(view)
        });
        await shoot(view, key);
        problems[tab] = await serious(page, `#ranktable-job-${run.uid}`);
      }
    } finally {
      await request.delete(`/ranktable/jobs/default/${name}`);
    }
    expect(problems).toEqual({
      sidebar: [],
      form: [],
      ...Object.fromEntries(TABS.map(t => [t, []]))
    });
  });
}
