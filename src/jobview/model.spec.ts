import { IJobRow } from '../jobs/model';
import { RanktableAPIError } from '../api/errors';
import { requestAPI } from '../api/request';
import { LAYOUT_RETRY_MS, RunModel, runHeader } from './model';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

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

describe('the Layout tab of a run whose rank table is still initializing', () => {
  const mocked = requestAPI as jest.Mock;
  const planned = { svg: '<svg/>', marks: [] };

  beforeEach(() => {
    jest.useFakeTimers();
    mocked.mockReset();
  });
  afterEach(() => jest.useRealTimers());

  function layoutCalls(): number {
    return mocked.mock.calls.filter(([endPoint]) =>
      String(endPoint).includes('/layout')
    ).length;
  }

  it('asks again until the table is complete, then shows the plan', async () => {
    let answers = 0;
    mocked.mockImplementation(async () => {
      answers += 1;
      if (answers < 3) {
        throw new RanktableAPIError(
          'the rank table of bert is still initializing',
          409,
          'the rank table of bert is still initializing',
          'rt-bert'
        );
      }
      return planned;
    });
    const model = new RunModel({
      namespace: 'default',
      name: 'bert',
      uid: 'u1'
    });
    await model.loadLayout();
    expect(model.layout).toBeNull();
    expect(model.layoutError).toContain('still initializing');
    await jest.advanceTimersByTimeAsync(LAYOUT_RETRY_MS);
    expect(layoutCalls()).toBe(2);
    await jest.advanceTimersByTimeAsync(LAYOUT_RETRY_MS);
    expect(layoutCalls()).toBe(3);
    expect(model.layout).toEqual(planned);
    expect(model.layoutError).toBe('');
    await jest.advanceTimersByTimeAsync(5 * LAYOUT_RETRY_MS);
    expect(layoutCalls()).toBe(3); // planned: no more asking
    model.dispose();
  });

  it('shows any other error once, and stops asking when the view closes', async () => {
    mocked.mockRejectedValue(
      new RanktableAPIError('no topology', 422, 'no topology', null)
    );
    const model = new RunModel({
      namespace: 'default',
      name: 'bert',
      uid: 'u1'
    });
    await model.loadLayout();
    await jest.advanceTimersByTimeAsync(5 * LAYOUT_RETRY_MS);
    expect(layoutCalls()).toBe(1);
    expect(model.layoutError).toBe('no topology');

    mocked.mockRejectedValue(
      new RanktableAPIError(
        'still initializing',
        409,
        'still initializing',
        null
      )
    );
    await model.loadLayout();
    model.dispose();
    await jest.advanceTimersByTimeAsync(5 * LAYOUT_RETRY_MS);
    expect(layoutCalls()).toBe(2);
  });
});
