import { RingBuffer } from './ringbuffer';

describe('RingBuffer', () => {
  it('keeps the newest items up to capacity', () => {
    const rb = new RingBuffer<number>(3);
    rb.push(1, 2);
    expect(rb.toArray()).toEqual([1, 2]);
    rb.push(3, 4, 5);
    expect(rb.toArray()).toEqual([3, 4, 5]);
    expect(rb.size).toBe(3);
    expect(rb.dropped).toBe(2);
    expect(rb.at(0)).toBe(3);
    expect(rb.at(3)).toBeUndefined();
  });
  it('stays bounded over many pushes', () => {
    const rb = new RingBuffer<number>(1000);
    for (let i = 0; i < 100000; i++) {
      rb.push(i);
    }
    expect(rb.size).toBe(1000);
    expect(rb.at(0)).toBe(99000);
    expect(rb.at(999)).toBe(99999);
  });
  it('rejects a bad capacity', () => {
    expect(() => new RingBuffer(0)).toThrow(/capacity/);
  });
  it('clears', () => {
    const rb = new RingBuffer<string>(2);
    rb.push('a');
    rb.clear();
    expect(rb.toArray()).toEqual([]);
  });
});
