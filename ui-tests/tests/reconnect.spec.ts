/**
 * The one stream websocket drops (closed from the server's side through Playwright's websocket route) and
 * comes back: every active subscription — the jobs watch, a Job view's log stream, the sync status — is
 * sent again on the new socket, and data flows again (a job submitted after the drop shows up; the log
 * goes on from where it stopped, without repeating lines). In a real JupyterLab (Debian chromium) at
 * 1440x900 against the simulated pool.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator, WebSocketRoute } from '@playwright/test';

import { LOOP, WORKSPACE_PAGE, openSidebar, submit } from './fixtures';

test.use({ autoGoto: false, ...WORKSPACE_PAGE });

interface IRoutedSocket {
  ws: WebSocketRoute;
  /** What the page sent on this socket (subscribe/unsubscribe messages). */
  sent: any[];
}

function subscriptions(socket: IRoutedSocket): Record<string, any> {
  const out: Record<string, any> = {};
  for (const m of socket.sent) {
    if (m.op === 'subscribe') {
      out[m.channel] = m;
    }
  }
  return out;
}

/** The highest "step N" among the log lines shown. */
async function lastStep(view: Locator): Promise<number> {
  const texts = await view.locator('.jp-Ranktable-logLine').allTextContents();
  return Math.max(
    0,
    ...texts.map(t => Number(/ step (\d+)/.exec(t)?.[1] ?? 0))
  );
}

test('after the stream websocket drops, every subscription is re-sent and data flows again', async ({
  page,
  request
}) => {
  test.setTimeout(240 * 1000);
  const sockets: IRoutedSocket[] = [];
  await page.routeWebSocket(/\/ranktable\/stream/, ws => {
    const server = ws.connectToServer();
    const socket: IRoutedSocket = { ws, sent: [] };
    ws.onMessage(message => {
      socket.sent.push(JSON.parse(String(message)));
      server.send(message);
    });
    sockets.push(socket);
  });
  const first = await submit(request, 'reconnect-a', LOOP('watched'), 1);
  try {
    await page.goto();
    const panel = await openSidebar(page);
    await panel.locator('.jp-Ranktable-jobRow[data-job="reconnect-a"]').click();
    const view = page.locator(`#ranktable-job-${first.uid}`);
    await expect(view.locator('.jp-Ranktable-logLine').first()).toContainText(
      'watched',
      { timeout: 120000 }
    );
    expect(sockets).toHaveLength(1);
    const before = subscriptions(sockets[0]);
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining(['jobs', 'logs', 'uploads'])
    );

    // the server side goes away (as on a proxy timeout or a server restart)
    const stepBefore = await lastStep(view);
    await sockets[0].ws.close({ code: 1001, reason: 'going away' });
    await expect.poll(() => sockets.length, { timeout: 30000 }).toBe(2);
    await expect
      .poll(() => Object.keys(subscriptions(sockets[1])).sort(), {
        timeout: 30000
      })
      .toEqual(Object.keys(before).sort());
    const after = subscriptions(sockets[1]);
    expect(after.logs).toMatchObject({
      job: 'reconnect-a',
      uid: first.uid,
      follow: true
    });
    // the log resumes from the last line each pod had
    expect(Object.keys(after.logs.since).length).toBeGreaterThan(0);

    // data flows again: new log lines, and a job submitted after the drop appears in the sidebar
    await expect
      .poll(() => lastStep(view), { timeout: 60000 })
      .toBeGreaterThan(stepBefore + 5);
    await submit(request, 'reconnect-b', LOOP('late'), 1);
    await expect(
      panel.locator('.jp-Ranktable-jobRow[data-job="reconnect-b"]')
    ).toBeVisible({ timeout: 60000 });
    await expect(panel.locator('.jp-Ranktable-banner')).toHaveCount(0);
    // no line shown twice across the reconnect
    const texts = await view.locator('.jp-Ranktable-logLine').allTextContents();
    expect(new Set(texts).size).toBe(texts.length);
    await page.screenshot({ path: test.info().outputPath('reconnected.png') });
  } finally {
    for (const name of ['reconnect-a', 'reconnect-b']) {
      await request.delete(`/ranktable/jobs/default/${name}`);
    }
  }
});
