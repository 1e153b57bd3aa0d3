import { RunPickerModel, shortAge, shortUid } from './runpicker';
import { JobsModel } from './model';
import { FakeStream } from '../testing/fakes';
import { RanktableAPIError, requestAPI } from '../api/request';

jest.mock('../api/request', () => {
  const actual = jest.requireActual('../api/request');
  return { ...actual, requestAPI: jest.fn() };
});

const request = requestAPI as jest.Mock;
const NOW = Date.parse('2026-12-02T05:00:00Z');

/** Answer `GET jobs` and `GET jobs/{ns}/{name}/runs` from tables (a missing runs entry is a 404). */
function serve(jobs: object[], runs: Record<string, object[]> = {}): void {
  request.mockImplementation(async (endPoint: string) => {
    if (endPoint === 'jobs' || endPoint.startsWith('jobs?')) {
      return { jobs };
    }
    const m = /^jobs\/([^/]+)\/([^/]+)\/runs$/.exec(endPoint);
    if (m && runs[`${m[1]}/${m[2]}`]) {
      return { runs: runs[`${m[1]}/${m[2]}`] };
    }
    throw new RanktableAPIError('no archived run', 404, 'not_found', null);
  });
}

const job = (name: string, uid: string, phase: string, agoSeconds: number) => ({
  name,
  namespace: 'default',
  uid,
  phase,
  nodes: 2,
  created: new Date(NOW - agoSeconds * 1000).toISOString()
});

describe('RunPickerModel', () => {
  beforeEach(() => request.mockReset());

  it('lists the pool’s jobs by name with their current run selected first', async () => {
    serve([
      job('zeta', 'z-1', 'Running', 30),
      job('alpha', 'a-1', 'Pending', 5)
    ]);
    const model = new RunPickerModel();
    const states: string[] = [];
    model.changed.connect(() => states.push(model.state));
    await model.load(undefined, NOW);
    expect(states).toEqual(['loading', 'ready']);
    expect(model.choices.map(c => c.name)).toEqual(['alpha', 'zeta']);
    expect(model.choices[1].runs).toEqual([
      {
        namespace: 'default',
        name: 'zeta',
        uid: 'z-1',
        phase: 'Running',
        age: 30,
        current: true
      }
    ]);
    expect(model.selected).toEqual({
      namespace: 'default',
      name: 'alpha',
      uid: 'a-1'
    });
  });

  it('adds earlier runs of a name from the archive and from this session, newest first, once each', async () => {
    serve([job('bert', 'b-3', 'Running', 10)], {
      'default/bert': [
        {
          namespace: 'default',
          job: 'bert',
          uid: 'b-3', // the current run is archived too: listed once, as current
          created: NOW / 1000 - 10,
          bytes: 10,
          pods: {},
          phase: 'Running',
          rotated: false
        },
        {
          namespace: 'default',
          job: 'bert',
          uid: 'b-1',
          created: NOW / 1000 - 3600,
          bytes: 10,
          pods: {},
          phase: 'Failed',
          rotated: false
        }
      ]
    });
    const seen = [
      {
        namespace: 'default',
        name: 'bert',
        uid: 'b-2',
        phase: 'Running',
        created: new Date(NOW - 600_000).toISOString()
      },
      // a job that is gone from the pool but was seen this session stays openable
      {
        namespace: 'default',
        name: 'gone',
        uid: 'g-1',
        phase: 'Completed',
        created: null
      }
    ];
    const model = new RunPickerModel(() => seen);
    await model.load(undefined, NOW);
    const bert = model.choices.find(c => c.name === 'bert')!;
    expect(bert.runs.map(r => [r.uid, r.phase, r.current, r.age])).toEqual([
      ['b-3', 'Running', true, 10],
      ['b-2', 'Running', false, 600],
      ['b-1', 'Failed', false, 3600]
    ]);
    const gone = model.choices.find(c => c.name === 'gone')!;
    expect(gone.runs.map(r => [r.uid, r.current, r.age])).toEqual([
      ['g-1', false, null]
    ]);
    model.select(bert.runs[2]);
    expect(model.selected).toEqual({
      namespace: 'default',
      name: 'bert',
      uid: 'b-1'
    });
    // a reload keeps a selection that still exists
    await model.load(undefined, NOW);
    expect(model.selected!.uid).toBe('b-1');
  });

  it('says empty when the pool has no job, and unreachable with the reason when the list fails', async () => {
    serve([]);
    const model = new RunPickerModel();
    await model.load(undefined, NOW);
    expect(model.state).toBe('empty');
    expect(model.selected).toBeNull();
    expect(model.error).toBe('');

    request.mockRejectedValue(
      new RanktableAPIError(
        'cluster unreachable: connection refused',
        503,
        'unreachable',
        null
      )
    );
    await model.load(undefined, NOW);
    expect(model.state).toBe('unreachable');
    expect(model.error).toBe('cluster unreachable: connection refused');
    expect(model.choices).toEqual([]);
    expect(model.selected).toBeNull();
  });

  it('asks for one namespace when given, and skips runs seen in others', async () => {
    serve([]);
    const model = new RunPickerModel(() => [
      {
        namespace: 'other',
        name: 'x',
        uid: 'x-1',
        phase: 'Running',
        created: null
      }
    ]);
    await model.load('team-a', NOW);
    expect(request).toHaveBeenCalledWith('jobs?namespace=team-a');
    expect(model.state).toBe('empty');
  });

  it('is quiet once disposed', async () => {
    serve([job('a', 'a-1', 'Running', 1)]);
    const model = new RunPickerModel();
    const calls: number[] = [];
    model.changed.connect(() => calls.push(1));
    model.dispose();
    await model.load(undefined, NOW);
    expect(calls).toEqual([]);
  });
});

describe('shortAge and shortUid', () => {
  it('formats ages compactly', () => {
    expect(shortAge(null)).toBe('–');
    expect(shortAge(42.7)).toBe('42 s');
    expect(shortAge(7 * 60 + 5)).toBe('7 min');
    expect(shortAge(3 * 3600)).toBe('3 h');
    expect(shortAge(3 * 3600 + 5 * 60)).toBe('3 h 5 min');
    expect(shortAge(2 * 86400 + 4 * 3600)).toBe('2 d 4 h');
  });

  it('shortens a uid to 8 characters', () => {
    expect(shortUid('70bc8edf-1234-5678')).toBe('70bc8edf');
  });
});

describe('JobsModel.seen', () => {
  it('remembers every run it saw, so a run replaced by a same-name resubmit stays listed', () => {
    const stream = new FakeStream();
    const jobs = new JobsModel(stream as any);
    jobs.watch();
    const sub = stream.last();
    sub.handlers.onData({
      event: 'snapshot',
      jobs: [job('bert', 'b-1', 'Running', 5)]
    });
    sub.handlers.onData({
      event: 'upsert',
      job: job('bert', 'b-2', 'Pending', 0)
    });
    expect(jobs.jobs.map(j => j.uid)).toEqual(['b-2']);
    expect([...jobs.seen.values()].map(r => [r.uid, r.name, r.phase])).toEqual([
      ['b-1', 'bert', 'Running'],
      ['b-2', 'bert', 'Pending']
    ]);
    jobs.dispose();
  });
});
