import { JobsModel, healthIssue, ageSeconds } from './model';
import { ComposeModel } from '../spec/model';
import { RunModel } from '../jobview/model';
import { requestAPI, requestChanged, postJSON } from '../api/request';
import { FakeStream, logMessage } from '../testing/fakes';
import { UNREACHABLE } from '../api/errors';
import { ServerConnection } from '@jupyterlab/services';
import { followedLogs } from '../testing/logs';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

const row = (name: string, phase: string, extra: object = {}) => ({
  name,
  namespace: 'default',
  uid: `uid-${name}`,
  phase,
  ...extra
});

describe('JobsModel', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('says a request without an answer cannot reach the server, and a stream error as it was told', async () => {
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    (requestAPI as jest.Mock).mockRejectedValueOnce(
      new ServerConnection.NetworkError(new TypeError('Failed to fetch'))
    );
    await jobs.refresh();
    expect(jobs.banner?.message).toBe(UNREACHABLE);
    jobs.watch();
    stream
      .last()
      .handlers.onError({ message: 'pool gone', reason: 'unreachable' });
    expect(jobs.banner).toMatchObject({
      message: 'pool gone',
      reason: 'unreachable'
    });
    jobs.dispose();
  });

  it('follows snapshots, records each run’s phases and signals phase changes', () => {
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    const changes: string[] = [];
    jobs.phaseChanged.connect((_, c) =>
      changes.push(`${c.job.name}:${c.previous}->${c.job.phase}`)
    );
    jobs.watch();
    const sub = stream.last();
    expect(sub.channel).toBe('jobs');
    sub.handlers.onData({
      event: 'snapshot',
      jobs: [row('b', 'Pending'), row('a', 'Running')]
    });
    expect(jobs.jobs.map(j => j.name)).toEqual(['a', 'b']);
    sub.handlers.onData({
      event: 'snapshot',
      jobs: [row('b', 'Running'), row('a', 'Running')]
    });
    expect(changes).toEqual(['b:Pending->Running']);
    expect(jobs.history.get('uid-b')!.map(h => h.phase)).toEqual([
      'Pending',
      'Running'
    ]);
  });

  it('a lost pool shows a banner with the reason, retries, and clears itself', () => {
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    jobs.watch();
    stream.last().handlers.onError({
      message: 'cluster unreachable: connection refused',
      reason: 'unreachable'
    });
    expect(jobs.banner?.message).toContain('connection refused');
    expect(jobs.banner!.retryAt).toBeGreaterThan(Date.now());
    expect(stream.subs.length).toBe(1);
    jest.advanceTimersByTime(1000);
    expect(stream.subs.length).toBe(2); // re-subscribed
    stream.last().handlers.onData({ event: 'snapshot', jobs: [] });
    expect(jobs.banner).toBeNull();
  });

  it('Refresh refetches even while the live list is up', async () => {
    (requestAPI as jest.Mock).mockImplementation(async (endPoint: string) =>
      endPoint === 'jobs' ? { jobs: [row('fresh', 'Running')] } : {}
    );
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    jobs.watch();
    stream.last().handlers.onData({ event: 'snapshot', jobs: [] });
    await jobs.refresh();
    expect(requestAPI).toHaveBeenCalledWith('jobs');
    expect(jobs.jobs.map(j => j.name)).toEqual(['fresh']);
    (requestAPI as jest.Mock).mockReset();
  });

  it('names the health problem: CrashLoopBackOff, exit code, restarts', () => {
    expect(
      healthIssue(
        row('c', 'Running', {
          health: {
            restarts: 4,
            reasons: ['CrashLoopBackOff'],
            exit_code: 3,
            ready: 0,
            total: 2
          }
        }) as any
      )
    ).toBe('CrashLoopBackOff, exit code 3, 4 restarts');
    expect(
      healthIssue(
        row('ok', 'Running', {
          health: { restarts: 0, reasons: [], exit_code: null }
        }) as any
      )
    ).toBe('');
    const created = new Date(Date.now() - 90_000).toISOString();
    expect(
      Math.round(ageSeconds(row('x', 'Running', { created }) as any)!)
    ).toBe(90);
  });
});

describe('LogsModel', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('subscribes for its run and filters by rank id and by node rank separately', () => {
    const { stream, logs } = followedLogs();
    expect(stream.last().params).toMatchObject({ job: 'bert', uid: 'u1' });
    const repaints: number[] = [];
    logs.changed.connect(() => repaints.push(1));
    stream.last().handlers.onData(
      logMessage([
        { pod: 'bert-0', rank: 0, ts: '1', text: '[rank 3] step 1' },
        { pod: 'bert-1', rank: 1, ts: '1', text: '[rank 11] step 1' },
        { pod: 'bert-1', rank: 1, ts: '2', text: 'no rank here' }
      ])
    );
    expect(repaints.length).toBe(1); // the first lines show at once
    stream
      .last()
      .handlers.onData(
        logMessage([
          { pod: 'bert-0', rank: 0, ts: '2', text: '[rank 3] step 2' }
        ])
      );
    stream
      .last()
      .handlers.onData(
        logMessage([
          { pod: 'bert-0', rank: 0, ts: '3', text: '[rank 3] step 3' }
        ])
      );
    expect(repaints.length).toBe(1); // the next ones are throttled: one repaint for both
    jest.advanceTimersByTime(200);
    expect(repaints.length).toBe(2);
    logs.setRankIds('11');
    expect(logs.view.toArray().map(l => l.text)).toEqual(['[rank 11] step 1']);
    logs.setRankIds('');
    logs.setNodeRanks('1');
    expect(logs.view.size).toBe(2);
    // new lines land in the filtered view as they arrive
    stream
      .last()
      .handlers.onData(
        logMessage([{ pod: 'bert-1', rank: 1, ts: '4', text: 'later' }])
      );
    expect(logs.view.size).toBe(3);
    logs.dispose();
    expect(stream.last().disposed).toBe(true);
  });
});

describe('JobsModel health and resubmit', () => {
  it('announces a failing run once, however often its row changes, and each new run again', () => {
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    const announced: string[] = [];
    jobs.failingChanged.connect((_, job) => announced.push(job.uid!));
    jobs.watch();
    const sub = stream.last();
    const crash = (uid: string, restarts: number) => ({
      ...row('crash', 'Running'),
      uid,
      health: { restarts, failing: 'CrashLoopBackOff, exit code 3' }
    });
    sub.handlers.onData({ event: 'snapshot', jobs: [row('crash', 'Running')] });
    sub.handlers.onData({ event: 'snapshot', jobs: [crash('u1', 1)] });
    sub.handlers.onData({ event: 'snapshot', jobs: [crash('u1', 2)] });
    sub.handlers.onData({ event: 'upsert', job: crash('u1', 3) });
    expect(announced).toEqual(['u1']);
    sub.handlers.onData({ event: 'snapshot', jobs: [crash('u2', 1)] });
    expect(announced).toEqual(['u1', 'u2']);
    jobs.dispose();
  });

  it('resubmits the run it is given, by uid', async () => {
    const jobs = new JobsModel(new FakeStream() as any);
    (postJSON as jest.Mock).mockResolvedValueOnce({
      namespace: 'default',
      name: 'bert',
      uid: 'u2'
    });
    (requestAPI as jest.Mock).mockResolvedValueOnce({ jobs: [] });
    const next = await jobs.resubmit({
      namespace: 'default',
      name: 'bert',
      uid: 'u1'
    });
    expect(postJSON).toHaveBeenLastCalledWith(
      'jobs/default/bert/resubmit?run=u1',
      {}
    );
    expect(next.uid).toBe('u2');
    jobs.dispose();
  });
});

describe('RunModel', () => {
  it('an ended run reads its record: the view shows its final phase', async () => {
    const run = new RunModel({ namespace: 'default', name: 'bert', uid: 'u1' });
    (requestChanged as jest.Mock).mockReset();
    (requestChanged as jest.Mock).mockRejectedValueOnce({ status: 404 });
    (requestAPI as jest.Mock).mockResolvedValueOnce({
      runs: [
        { uid: 'u0', phase: 'Completed' },
        { uid: 'u1', phase: 'Stopped', ended: 1 }
      ]
    });
    await run.refresh();
    expect(run.ended).toBe('the job was stopped or deleted');
    expect(requestAPI).toHaveBeenLastCalledWith('jobs/default/bert/runs');
    expect(run.record?.phase).toBe('Stopped');
    run.dispose();
  });

  it('sends back the ETag of its description and keeps it while the server answers unchanged', async () => {
    const run = new RunModel({ namespace: 'default', name: 'bert', uid: 'u1' });
    const description = {
      job: { uid: 'u1', phase: 'Running' },
      pods: [],
      events: [],
      rank_table_status: 'completed'
    };
    const changed = requestChanged as jest.Mock;
    changed.mockReset();
    changed.mockResolvedValueOnce({ data: description, etag: '"t-1"' });
    changed.mockResolvedValueOnce(null); // 304
    const emits: number[] = [];
    run.changed.connect(() => emits.push(1));
    await run.refresh();
    expect(changed).toHaveBeenLastCalledWith('jobs/default/bert', '');
    expect(run.description).toBe(description);
    await run.refresh();
    expect(changed).toHaveBeenLastCalledWith('jobs/default/bert', '"t-1"');
    expect(run.description).toBe(description);
    expect(emits.length).toBe(1); // unchanged: no repaint
    run.dispose();
  });
});

describe('ComposeModel', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('keeps the file text and the form in step, with template parameters', async () => {
    const jobs = new JobsModel(new FakeStream() as any);
    const compose = new ComposeModel(jobs);
    const written: string[] = [];
    compose.textEdited.connect((_, t) => written.push(t));
    compose.setText('name: bert\nimage: ${image}\n');
    expect(compose.spec).toEqual({ name: 'bert', image: '${image}' });
    expect(compose.params.map(p => p.name)).toEqual(['image']);
    expect(compose.resolved()).toBeNull();
    compose.setSpec({ ...compose.spec, nodes: 4 });
    expect(written).toEqual(['name: bert\nimage: ${image}\nnodes: 4\n']);
    compose.setParam('image', 'bert:v1');
    expect(compose.resolved()).toEqual({
      name: 'bert',
      image: 'bert:v1',
      nodes: 4
    });
    (postJSON as jest.Mock).mockResolvedValueOnce({
      issues: [],
      yaml: 'kind: Job',
      spec: {}
    });
    await compose.check();
    expect(postJSON).toHaveBeenCalledWith('jobs/compose', {
      spec: { name: 'bert', image: 'bert:v1', nodes: 4 }
    });
    expect(compose.yaml).toBe('kind: Job');
  });
});
