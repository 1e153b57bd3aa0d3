/**
 * Log view under load: a job on the simulated pool followed live in its Job view (main area, full width);
 * also the time from opening the Job view to its first lines. Measures frame times
 * (requestAnimationFrame deltas, long tasks), the JS heap over time and the lines delivered over the
 * websocket; prints one JSON line of figures. Run through `python bench/bench_logview.py` (it starts the
 * stack and prints the summary).
 *
 * BENCH_FEED=pods (default up to 64 pods): every pod prints its share of the lines and they travel the whole
 * way (process -> simulated kubelet -> API server -> Jupyter server -> websocket). BENCH_FEED=pool (default
 * above 64 pods): the pods run the simulated kubelet's synthetic log source (`ranktable-sim-synthetic-log
 * --rate=R`, no process per pod: the kubelet's log endpoint makes up the same lines at the pod's rate) and
 * the lines travel the same whole way (API server -> Kubernetes client log streams -> Jupyter server ->
 * websocket -> Job view). BENCH_FEED=socket: the pods
 * print one line each and sleep; once their first lines show, a feeder inside the page delivers the lines
 * on the page's own stream websocket as messages of the server's `logs` channel (a batch every 100 ms, a group of lines per pod), so
 * the browser gets the full rate where the Python pool on this machine cannot produce it (1,024 pods x
 * 100 lines/s). Building and encoding the batches runs on the page's main thread too: a cost the real
 * stream does not add, so these frame figures err on the slow side.
 */
import { expect, test } from '@jupyterlab/galata';

const PODS = Number(process.env.BENCH_PODS ?? 64);
const RATE = Number(process.env.BENCH_RATE ?? 2000); // lines per second, all pods together
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const FEED = process.env.BENCH_FEED ?? (PODS > 64 ? 'pool' : 'pods');
// BENCH_TAB: the Job view tab shown while measuring (`Overview` or `Metrics`: their diagnosis and metrics
// polls run alongside the logs, which stay subscribed); default the logs tab
const TAB = process.env.BENCH_TAB ?? '';
const JOB = 'logbench';
const BATCH_MS = 100;

test(`log view: ${PODS} pods x ${RATE} lines/s for ${SECONDS} s (${FEED})`, async ({
  page,
  request
}) => {
  test.setTimeout((SECONDS + 600) * 1000);
  const perPod = RATE / PODS;
  const printer = [
    'import sys, time',
    `n, dt = int(${perPod} * (${SECONDS} + 60)), 1.0 / ${perPod}`,
    'start = time.monotonic()',
    'for i in range(n):',
    '    print(f"step {i} loss {1.0 / (i + 1):.6f} throughput 1234.5 samples/s" + ("  RuntimeError: HCCL timeout" if i % 500 == 499 else ""), flush=True)',
    '    time.sleep(max(0.0, start + (i + 1) * dt - time.monotonic()))'
  ].join('\n');
  const commands: Record<string, string[]> = {
    socket: [
      '/bin/sh',
      '-c',
      'echo "[rank 0] started on $(hostname)"; exec sleep 100000'
    ],
    pool: ['ranktable-sim-synthetic-log', `--rate=${perPod}`],
    pods: ['python3', '-c', printer]
  };
  const command = commands[FEED];
  expect(
    command,
    `BENCH_FEED must be one of ${Object.keys(commands)}`
  ).toBeTruthy();
  const spec = {
    name: JOB,
    image: 'bench:v1',
    nodes: PODS,
    npus_per_node: 8,
    command
  };
  const submitted = await request.post('/ranktable/jobs', { data: { spec } });
  expect(submitted.status(), await submitted.text()).toBe(201);

  // count log lines as the page receives them (the stream socket opens at start-up, so wrap it first)
  // BENCH_FEED=socket: the page's stream websocket gets the log lines from a feeder in the page (as the
  // server's `logs` channel sends them: one message per batch), switched on once the first real lines show
  await page.addInitScript(
    (cfg: {
      feed: boolean;
      pods: number;
      perPod: number;
      job: string;
      batchMs: number;
    }) => {
      const w = window as any;
      const Native = w.WebSocket;
      w.__rtLines = 0;
      w.__rtFeedOn = false;
      w.__rtFed = 0;
      const text = (pod: number, step: number) =>
        `[rank ${pod * 8}] step ${step} loss ${(1 / (step + 1)).toFixed(6)} throughput 1234.5 samples/s` +
        (step % 500 === 499 ? '  RuntimeError: HCCL timeout' : '');
      w.WebSocket = class extends Native {
        constructor(url: string, protocols?: string | string[]) {
          super(url, protocols);
          this.addEventListener('message', (e: MessageEvent) => {
            if (typeof e.data === 'string' && e.data.includes('"pods"')) {
              try {
                for (const g of JSON.parse(e.data).data.pods) {
                  w.__rtLines += g.n;
                }
                w.__rtFirstBatchAt ??= performance.now();
              } catch {
                /* not a log batch */
              }
            }
          });
        }
        send(data: string) {
          super.send(data);
          if (typeof data === 'string' && data.includes('"logs"')) {
            w.__rtSubscribeAt ??= performance.now();
          }
          if (!cfg.feed || typeof data !== 'string') {
            return;
          }
          const m = JSON.parse(data);
          if (
            m.op !== 'subscribe' ||
            m.channel !== 'logs' ||
            m.job !== cfg.job
          ) {
            return;
          }
          const perBatch = (cfg.perPod * cfg.batchMs) / 1000;
          let step = 0;
          let owed = 0;
          const timer = setInterval(() => {
            if (this.readyState !== 1) {
              clearInterval(timer);
              return;
            }
            if (!w.__rtFeedOn) {
              return;
            }
            owed += perBatch;
            const n = Math.floor(owed);
            owed -= n;
            const ts = new Date().toISOString().replace('Z', '000000Z');
            const pods: object[] = [];
            for (let pod = 0; n && pod < cfg.pods; pod++) {
              const texts: string[] = [];
              for (let k = 0; k < n; k++) {
                texts.push(text(pod, step + k));
              }
              pods.push({
                pod: `${w.__rtPodPrefix}${pod}`,
                rank: pod,
                n,
                ts: Array(n).fill(ts).join('\n'),
                text: texts.join('\n')
              });
            }
            step += n;
            if (pods.length) {
              w.__rtFed += n * cfg.pods;
              const msg = JSON.stringify({
                type: 'data',
                id: m.id,
                data: { pods }
              });
              this.dispatchEvent(new MessageEvent('message', { data: msg }));
            }
          }, cfg.batchMs);
        }
      };
    },
    { feed: FEED === 'socket', pods: PODS, perPod, job: JOB, batchMs: BATCH_MS }
  );
  await page.reload();
  const wsLines = () =>
    page.evaluate(() => (window as any).__rtLines as number);

  await page.sidebar.openTab('jp-ranktable-panel');
  const row = page.locator(`.jp-Ranktable-jobRow[data-job="${JOB}"]`);
  await expect(row).toHaveAttribute('data-phase', 'Running', {
    timeout: 180000
  });
  // the page's own clock for each step: the click event, the first line in the DOM and the frame after it
  // (Playwright's click first waits for the row to be stable, and its visibility polls add up to ~1 s)
  await page.evaluate(() => {
    const w = window as any;
    document.addEventListener(
      'click',
      e => {
        w.__rtClickAt ??= e.timeStamp;
      },
      { capture: true, once: true }
    );
    const seen = new MutationObserver(() => {
      if (
        document.querySelector('.jp-Ranktable-jobView .jp-Ranktable-logLine')
      ) {
        seen.disconnect();
        w.__rtFirstLineAt = performance.now();
        requestAnimationFrame(() => {
          w.__rtFirstPaintAt = performance.now();
        });
      }
    });
    seen.observe(document.body, { childList: true, subtree: true });
  });
  const opened = Date.now();
  const openedAt: number = await page.evaluate(() => performance.now());
  await row.click();
  const view = page.locator('.jp-Ranktable-jobView').last();
  await expect(view.locator('.jp-Ranktable-logLine').first()).toBeVisible({
    timeout: 120000
  });
  // Playwright's own figure: its click's checks and expect's polling (100, 250, 500, 1000 ms...) included
  const firstLinesPlaywrightMs = Date.now() - opened;
  // the steps in the page: the logs subscribe sent, the first batch of lines received (then the render)
  await page.waitForFunction(() => (window as any).__rtFirstPaintAt);
  const steps: {
    click: number;
    subscribe: number;
    batch: number;
    line: number;
    paint: number;
  } = await page.evaluate(at => {
    const w = window as any;
    return {
      click: Math.round(w.__rtClickAt - at),
      subscribe: Math.round(w.__rtSubscribeAt - at),
      batch: Math.round(w.__rtFirstBatchAt - at),
      line: Math.round(w.__rtFirstLineAt - at),
      paint: Math.round(w.__rtFirstPaintAt - at)
    };
  }, openedAt);
  const status = view.locator('.jp-Ranktable-logStatus');
  if (FEED === 'socket') {
    // the fed lines carry the job's real pod names (the first line shown names one: JOB-TASK-INDEX)
    const pod = await view
      .locator('.jp-Ranktable-logLine')
      .first()
      .getAttribute('data-pod');
    await page.evaluate(
      prefix => {
        const w = window as any;
        w.__rtPodPrefix = prefix;
        w.__rtFeedOn = true;
      },
      pod!.replace(/\d+$/, '')
    );
  }
  await expect(status).toContainText(`${PODS} pods`, { timeout: 300000 });
  const tab = (label: string) =>
    view.locator('.jp-Ranktable-tab', { hasText: label }).click();
  if (TAB) {
    await tab(TAB);
  }

  const cdp = await page.context().newCDPSession((page as any).page ?? page);
  await cdp.send('Performance.enable');
  const heap = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics');
    return metrics.find(m => m.name === 'JSHeapUsedSize')?.value ?? 0;
  };
  // The heap that survives a full collection: the 5 s samples also count garbage not yet collected,
  // so only these two say whether the view retains memory over the run.
  const retainedHeap = async () => {
    await cdp.send('HeapProfiler.collectGarbage');
    return heap();
  };
  const retainedAtStart = await retainedHeap();
  await page.evaluate(() => {
    const w = window as any;
    w.__frames = [];
    w.__longTasks = 0;
    let last = performance.now();
    const tick = (now: number) => {
      w.__frames.push(now - last);
      last = now;
      w.__raf = requestAnimationFrame(tick);
    };
    w.__raf = requestAnimationFrame(tick);
    new PerformanceObserver(list => {
      w.__longTasks += list.getEntries().length;
    }).observe({ entryTypes: ['longtask'] });
  });
  const linesAtStart = await wsLines();
  const windowStart = Date.now(); // wall clock: bench_logview.py reads each stage's counters over it
  const heapSamples: number[] = [];
  for (let t = 0; t < SECONDS; t += 5) {
    heapSamples.push(await heap());
    await page.waitForTimeout(5000);
  }
  heapSamples.push(await heap());
  const linesDelivered = (await wsLines()) - linesAtStart;
  const windowEnd = Date.now();
  const fed: number = await page.evaluate(() => {
    const w = window as any;
    w.__rtFeedOn = false;
    return w.__rtFed;
  });
  const frames: number[] = await page.evaluate(() => {
    const w = window as any;
    cancelAnimationFrame(w.__raf);
    return w.__frames.slice(1);
  });
  const longTasks: number = await page.evaluate(
    () => (window as any).__longTasks
  );
  const retainedAtEnd = await retainedHeap(); // after the frames are read: a full GC is a long frame
  if (TAB) {
    await tab('Logs');
  }
  const kept = await status.innerText();
  const sorted = [...frames].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  const figures = {
    pods: PODS,
    feed: FEED,
    tab: TAB || 'Logs',
    target_lines_per_second: RATE,
    seconds: SECONDS,
    lines_per_second_delivered: Math.round(linesDelivered / SECONDS),
    frames: frames.length,
    fps: Math.round(frames.length / SECONDS),
    fps_median: Number((1000 / pct(0.5)).toFixed(1)),
    // what the user waits: from the click event to the first line painted, in the page's clock
    first_lines_ms: steps.paint - steps.click,
    first_lines_playwright_ms: firstLinesPlaywrightMs,
    click_ms: steps.click,
    subscribe_ms: steps.subscribe,
    first_batch_ms: steps.batch,
    first_line_in_dom_ms: steps.line,
    first_line_painted_ms: steps.paint,
    frame_ms_p50: Number(pct(0.5).toFixed(1)),
    frame_ms_p95: Number(pct(0.95).toFixed(1)),
    frame_ms_p99: Number(pct(0.99).toFixed(1)),
    frame_ms_max: Number(sorted[sorted.length - 1].toFixed(1)),
    long_tasks: longTasks,
    heap_mb_start: Number((heapSamples[0] / 1e6).toFixed(1)),
    heap_mb_end: Number((heapSamples[heapSamples.length - 1] / 1e6).toFixed(1)),
    heap_mb_max: Number((Math.max(...heapSamples) / 1e6).toFixed(1)),
    heap_mb_after_gc_start: Number((retainedAtStart / 1e6).toFixed(1)),
    heap_mb_after_gc_end: Number((retainedAtEnd / 1e6).toFixed(1)),
    view_status: kept.replace(/\s+/g, ' '),
    lines_fed_by_bench: fed,
    lines_delivered: linesDelivered,
    window_start_ms: windowStart,
    window_end_ms: windowEnd
  };
  console.log('BENCH_LOGVIEW ' + JSON.stringify(figures));
  await request.delete(`/ranktable/jobs/default/${JOB}`);
});
