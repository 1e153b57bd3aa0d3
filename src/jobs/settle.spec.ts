import { IPhaseChange, PhaseSettler, stoppedNotice } from './settle';

type Job = { phase: string };

describe('quiet phase notifications (#31.5)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function settler(): [PhaseSettler<Job>, IPhaseChange<Job>[]] {
    const said: IPhaseChange<Job>[] = [];
    return [new PhaseSettler<Job>(c => said.push(c), 3000), said];
  }

  it('a flap (Running -> Pending -> Running) says nothing', () => {
    const [s, said] = settler();
    s.change('j', 'Running', { phase: 'Pending' });
    jest.advanceTimersByTime(1000);
    s.change('j', 'Pending', { phase: 'Running' });
    jest.advanceTimersByTime(10000);
    expect(said).toEqual([]);
  });

  it('a change that holds is announced once, from the phase last announced', () => {
    const [s, said] = settler();
    s.change('j', 'Pending', { phase: 'Running' });
    jest.advanceTimersByTime(2999);
    expect(said).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(said.map(c => `${c.from} -> ${c.to}`)).toEqual([
      'Pending -> Running'
    ]);
    // quick steps through a phase: one toast from where it was to where it settled
    s.change('j', 'Running', { phase: 'Pending' });
    jest.advanceTimersByTime(500);
    s.change('j', 'Pending', { phase: 'Restarting' });
    jest.advanceTimersByTime(3000);
    expect(said.map(c => `${c.from} -> ${c.to}`)).toEqual([
      'Pending -> Running',
      'Running -> Restarting'
    ]);
  });

  it('a terminal phase cancels what was pending (the finish has its own notification)', () => {
    const [s, said] = settler();
    s.change('j', 'Running', { phase: 'Pending' });
    s.change('j', 'Pending', { phase: 'Completed' }, true);
    jest.advanceTimersByTime(10000);
    expect(said).toEqual([]);
  });

  it('jobs settle independently', () => {
    const [s, said] = settler();
    s.change('a', 'Pending', { phase: 'Running' });
    s.change('b', 'Running', { phase: 'Pending' });
    s.change('b', 'Pending', { phase: 'Running' });
    jest.advanceTimersByTime(3000);
    expect(said).toHaveLength(1);
  });

  it('"0 new log lines archived" is no news; anything else is said', () => {
    expect(
      stoppedNotice(
        '0 new log lines of run 1a2b3c4d archived (`ranktable job logs j --run 1a2b3c4d`)'
      )
    ).toBeNull();
    expect(stoppedNotice('')).toBeNull();
    expect(stoppedNotice(null)).toBeNull();
    const kept = '10 new log lines of run 1a2b3c4d archived (...)';
    expect(stoppedNotice(kept)).toBe(kept);
    expect(stoppedNotice('no logs kept: the job is not on the cluster')).toBe(
      'no logs kept: the job is not on the cluster'
    );
  });
});
