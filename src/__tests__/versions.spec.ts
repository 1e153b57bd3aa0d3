import { MINUTE, rollback, saveVersion } from '../versions';

describe('versions', () => {
  it('keeps at most one version per minute', () => {
    let v = saveVersion([], 'a', 0);
    v = saveVersion(v, 'b', 30_000);
    expect(v.map(x => x.value)).toEqual(['b']);
    v = saveVersion(v, 'c', 30_000 + MINUTE);
    expect(v.map(x => x.value)).toEqual(['c', 'b']);
  });
  it('is bounded', () => {
    let v = saveVersion<number>([], 0, 0, '', 3);
    for (let i = 1; i < 10; i++) {
      v = saveVersion(v, i, i * MINUTE, '', 3);
    }
    expect(v.map(x => x.value)).toEqual([9, 8, 7]);
  });
  it('rolls back by adding the old value as newest', () => {
    let v = saveVersion([], 'a', 0);
    v = saveVersion(v, 'b', 2 * MINUTE);
    const r = rollback(v, 1, 10 * MINUTE);
    expect(r.value).toBe('a');
    expect(r.versions.map(x => x.value)).toEqual(['a', 'b', 'a']);
    expect(() => rollback(v, 5, 0)).toThrow(/no saved version/);
  });
});
