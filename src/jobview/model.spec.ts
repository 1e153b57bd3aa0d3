import { IJobRow } from '../jobs/model';
import { runHeader } from './model';

const running: IJobRow = {
  namespace: 'default',
  name: 'bert',
  uid: 'u1',
  phase: 'Running',
  nodes: 4,
  running: 4,
  health: { ready: 4, total: 4 }
} as IJobRow;

describe('the Job view header', () => {
  it('says pods ready of a healthy running run, which can be stopped', () => {
    const h = runHeader(running, '', null, undefined);
    expect(h).toEqual({
      phase: 'Running',
      label: 'Running',
      ended: false,
      failingWhy: ''
    });
  });

  it('says Failing with why on a crash-looping run, not Running', () => {
    const crashing = {
      ...running,
      health: { ready: 4, total: 4, failing: 'CrashLoopBackOff, exit code 3' }
    } as IJobRow;
    const h = runHeader(crashing, '', null, undefined);
    expect(h.label).toBe('Failing');
    expect(h.failingWhy).toBe('CrashLoopBackOff, exit code 3');
    expect(h.ended).toBe(false);
  });

  it('has nothing to stop on a Completed run, even while its job is listed', () => {
    const done = { ...running, phase: 'Completed' } as IJobRow;
    const h = runHeader(done, '', null, undefined);
    expect(h.ended).toBe(true);
    expect(h.label).toBe('Completed');
  });

  it('says a replaced or stopped run’s final phase from its record', () => {
    const h = runHeader(undefined, 'the job was stopped', 'Stopped', 'Running');
    expect(h).toEqual({
      phase: 'Stopped',
      label: 'Stopped',
      ended: true,
      failingWhy: ''
    });
    expect(runHeader(undefined, '', null, 'Pending').phase).toBe('Pending');
  });
});
