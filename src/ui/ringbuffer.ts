/**
 * A fixed-capacity buffer keeping the newest items: the log view's memory stays bounded however long
 * a job runs.
 */
export class RingBuffer<T> {
  private _items: (T | undefined)[];
  private _start = 0;
  private _size = 0;
  private _dropped = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new Error(`capacity must be a positive integer, got ${capacity}`);
    }
    this._items = new Array(capacity);
  }

  get size(): number {
    return this._size;
  }

  /** How many items were pushed out since creation. */
  get dropped(): number {
    return this._dropped;
  }

  push(...items: T[]): void {
    for (const item of items) {
      const end = (this._start + this._size) % this.capacity;
      this._items[end] = item;
      if (this._size < this.capacity) {
        this._size++;
      } else {
        this._start = (this._start + 1) % this.capacity;
        this._dropped++;
      }
    }
  }

  at(index: number): T | undefined {
    if (index < 0 || index >= this._size) {
      return undefined;
    }
    return this._items[(this._start + index) % this.capacity];
  }

  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this._size; i++) {
      out.push(this._items[(this._start + i) % this.capacity] as T);
    }
    return out;
  }

  clear(): void {
    this._items = new Array(this.capacity);
    this._start = 0;
    this._size = 0;
  }
}
