import { getEventListeners } from 'node:events';
import type * as Pools from 'src/common/threads/thread-pool.js';
import type * as Threads from 'src/common/threads/worker-thread.js';
import { until } from './utils/until.js';

/** The built modules: their threads run a compiled script, as in production. */
const { RestartingThread, WorkerThread } = (await import(
  `${process.cwd()}/dist/common/threads/worker-thread.js`
)) as typeof Threads;
const { ThreadPool, ThreadTimeoutError } = (await import(
  `${process.cwd()}/dist/common/threads/thread-pool.js`
)) as typeof Pools;

type Request =
  | { op: 'echo'; value: unknown }
  | { op: 'count' }
  | { op: 'busy'; ms: number }
  | { op: 'throw'; message: string }
  | { op: 'exit' }
  | { op: 'thread' }
  | { op: 'alloc' };
type Info = { threadId: number };

const SCRIPT = new URL('./utils/test.worker.mjs', import.meta.url);

describe('WorkerThread', () => {
  let failures: Error[];
  const start = () =>
    WorkerThread.start<Request, unknown, Info>(SCRIPT, null, { onFailure: (error) => failures.push(error) });
  beforeEach(() => (failures = []));

  it('answers requests in order, one at a time; a request that fails fails alone', async () => {
    const thread = await start();
    try {
      const answers = Promise.all([
        thread.call({ op: 'busy', ms: 100 }),
        thread.call({ op: 'echo', value: 1 }),
        thread.call({ op: 'echo', value: { two: [2] } }),
      ]);
      expect(thread.idle).toBe(false);
      expect(await answers).toEqual(['done', 1, { two: [2] }]);
      expect(thread.idle).toBe(true);

      await expect(thread.call({ op: 'throw', message: 'out of range' })).rejects.toMatchObject({
        name: 'RangeError',
        message: 'out of range',
      });
      // A request that cannot cross to the thread (a function) is refused here, the thread unharmed.
      await expect(thread.call({ op: 'echo', value: () => 1 })).rejects.toThrow(/could not be cloned/);
      expect(await thread.call({ op: 'echo', value: 'still here' })).toBe('still here');
      expect(failures).toEqual([]);
    } finally {
      await thread.close();
    }
  });

  it('drops a request still waiting when its signal aborts, and never runs it; one under way runs', async () => {
    const thread = await start();
    try {
      const gaveUp = new AbortController();
      const running = thread.call({ op: 'busy', ms: 200 }, gaveUp.signal);
      const waiting = thread.call({ op: 'count' }, gaveUp.signal);
      const kept = thread.call({ op: 'count' }, new AbortController().signal);
      gaveUp.abort(new Error('past the deadline'));
      await expect(waiting).rejects.toThrow('past the deadline');
      expect(await running).toBe('done');
      expect(await kept).toBe(1); // the dropped request never ran
      await expect(thread.call({ op: 'count' }, gaveUp.signal)).rejects.toThrow('past the deadline');
      expect(await thread.call({ op: 'count' })).toBe(2);
      // Every call took its listener off the signal when it settled, the one that still holds too.
      expect(getEventListeners(gaveUp.signal, 'abort')).toEqual([]);
      const holding = new AbortController();
      await thread.call({ op: 'echo', value: 1 }, holding.signal);
      await expect(thread.call({ op: 'echo', value: () => 1 }, holding.signal)).rejects.toThrow(/cloned/);
      expect(getEventListeners(holding.signal, 'abort')).toEqual([]);
    } finally {
      await thread.close();
    }
  });

  it('fails what is under way and what waits when the thread ends, and says so once', async () => {
    const thread = await start();
    const ended = thread.call({ op: 'exit' });
    const waiting = thread.call({ op: 'echo', value: 1 });
    await expect(ended).rejects.toThrow('a worker thread exited (code 3)');
    await expect(waiting).rejects.toThrow('a worker thread exited (code 3)');
    expect(thread.alive).toBe(false);
    await expect(thread.call({ op: 'echo', value: 2 })).rejects.toThrow('exited');
    expect(failures.map((error) => error.message)).toEqual(['a worker thread exited (code 3)']);
    await thread.close();
  });

  it('closes after the request under way, refusing those that wait; closing twice is closing once', async () => {
    const thread = await start();
    const running = thread.call({ op: 'busy', ms: 300 });
    const waiting = thread.call({ op: 'echo', value: 1 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the busy request has reached the thread
    const closed = thread.close();
    expect(thread.close()).toBe(closed);
    await expect(waiting).rejects.toThrow('the worker thread was closed');
    await expect(running).resolves.toBe('done');
    await closed;
    await expect(thread.call({ op: 'echo', value: 2 })).rejects.toThrow('closed');
    expect(failures).toEqual([]); // closing is no failure
  });

  it('sends up to `inFlight` requests on, and closing waits for all of them', async () => {
    const thread = await WorkerThread.start<Request, unknown, Info>(SCRIPT, null, { inFlight: 2 });
    const sent = Promise.all([thread.call({ op: 'busy', ms: 300 }), thread.call({ op: 'echo', value: 1 })]);
    const waiting = thread.call({ op: 'echo', value: 2 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = thread.close();
    await expect(waiting).rejects.toThrow('the worker thread was closed');
    await expect(sent).resolves.toEqual(['done', 1]);
    await closed;
  });

  it('RestartingThread starts a new thread on the request after one ended, and none once closed', async () => {
    const thread = await RestartingThread.start<Request, unknown, Info>(SCRIPT, null, {
      onFailure: (error) => failures.push(error),
    });
    const first = thread.info.threadId;
    await expect(thread.call({ op: 'exit' })).rejects.toThrow('exited');
    expect(await thread.call({ op: 'echo', value: 'again' })).toBe('again');
    expect(thread.info.threadId).not.toBe(first);
    expect(failures).toHaveLength(1);
    await thread.close();
    await expect(thread.call({ op: 'echo', value: 'closed' })).rejects.toThrow('closed');
  });

  it('RestartingThread.restart starts the new thread in the background, once', async () => {
    const starts = new Int32Array(new SharedArrayBuffer(4));
    const thread = await RestartingThread.start<Request, unknown, Info>(
      SCRIPT,
      { starts },
      {
        onFailure: (error) => failures.push(error),
      },
    );
    try {
      await expect(thread.call({ op: 'exit' })).rejects.toThrow('exited');
      expect(thread.up).toBe(false);
      thread.restart();
      thread.restart(); // the start under way serves both
      expect(thread.up).toBe(false); // restart does not wait for the thread
      await until(() => thread.up);
      expect(Atomics.load(starts, 0)).toBe(2);
      expect(thread.idle).toBe(true);
      thread.restart(); // it is up: nothing to start
      expect(await thread.call({ op: 'echo', value: 'up' })).toBe('up');
      expect(Atomics.load(starts, 0)).toBe(2);
    } finally {
      await thread.close();
    }
  });

  it('RestartingThread reports a start that fails, and pauses before the next', async () => {
    const starts = new Int32Array(new SharedArrayBuffer(4));
    const refuse = new Int32Array(new SharedArrayBuffer(4));
    const thread = await RestartingThread.start<Request, unknown, Info>(
      SCRIPT,
      { starts, refuse },
      {
        onFailure: (error) => failures.push(error),
      },
    );
    try {
      Atomics.store(refuse, 0, 1);
      await expect(thread.call({ op: 'exit' })).rejects.toThrow('exited');
      await expect(thread.call({ op: 'echo', value: 1 })).rejects.toThrow(
        'a worker thread could not start again: cannot load',
      );
      const failed = performance.now();
      expect(failures.map((error) => error.message)).toEqual([
        'a worker thread exited (code 3)',
        'a worker thread could not start again: cannot load',
      ]);
      // Within the pause (a second after the first failed start), requests fail without a start.
      Atomics.store(refuse, 0, 0);
      await expect(thread.call({ op: 'echo', value: 2 })).rejects.toThrow('could not start again');
      thread.restart();
      expect(Atomics.load(starts, 0)).toBe(2);
      expect(failures).toHaveLength(2); // a request refused in the pause is not a new failure
      // After it, the next request starts a thread again.
      await new Promise((resolve) => setTimeout(resolve, 1_050 - (performance.now() - failed)));
      expect(await thread.call({ op: 'echo', value: 3 })).toBe(3);
      expect(Atomics.load(starts, 0)).toBe(3);
      expect(thread.up).toBe(true);
    } finally {
      await thread.close();
    }
  });

  it('RestartingThread.open leaves a failed first start to its caller, and starts again after the pause', async () => {
    const starts = new Int32Array(new SharedArrayBuffer(4));
    const refusing = new Int32Array(new SharedArrayBuffer(4));
    Atomics.store(refusing, 0, 1);
    const thread = RestartingThread.create<Request, unknown, Info>(
      SCRIPT,
      { starts, refuse: refusing },
      { onFailure: (error) => failures.push(error) },
    );
    const settle = () => new Promise((resolve) => setTimeout(resolve, 200)); // for a thread to run
    try {
      await settle();
      expect(Atomics.load(starts, 0)).toBe(0); // created, not started
      await expect(thread.open()).rejects.toThrow(/^cannot load$/);
      const failed = performance.now();
      expect(failures).toEqual([]); // the caller's to report
      expect(() => thread.info).toThrow('no worker thread has started yet');
      // Within the pause, neither a request nor `restart` starts a thread.
      Atomics.store(refusing, 0, 0);
      await expect(thread.call({ op: 'echo', value: 1 })).rejects.toThrow('cannot load');
      thread.restart();
      await settle();
      expect(Atomics.load(starts, 0)).toBe(1);
      // After it, `restart` starts one in the background.
      await new Promise((resolve) => setTimeout(resolve, 1_050 - (performance.now() - failed)));
      thread.restart();
      expect(thread.up).toBe(false);
      await until(() => thread.up);
      expect(Atomics.load(starts, 0)).toBe(2);
      expect(await thread.call({ op: 'echo', value: 2 })).toBe(2);
      expect(failures).toEqual([]);
    } finally {
      await thread.close();
    }
  });

  it('RestartingThread drops a request whose signal aborts while its thread starts', async () => {
    const thread = RestartingThread.create<Request, unknown, Info>(SCRIPT, { startMs: 1_000 });
    try {
      const gaveUp = new AbortController();
      const asked = performance.now();
      const call = thread.call({ op: 'count' }, gaveUp.signal);
      setTimeout(() => gaveUp.abort(new Error('past the deadline')), 50);
      await expect(call).rejects.toThrow('past the deadline');
      expect(performance.now() - asked).toBeLessThan(500);
      expect(getEventListeners(gaveUp.signal, 'abort')).toEqual([]);
      expect(await thread.call({ op: 'count' })).toBe(1); // the dropped request never ran
    } finally {
      await thread.close();
    }
  });

  it('RestartingThread.open fails when the thread is closed while it starts', async () => {
    const thread = RestartingThread.create<Request, unknown, Info>(SCRIPT, { startMs: 200 });
    const opening = thread.open();
    await thread.close();
    await expect(opening).rejects.toThrow('the worker thread was closed');
    expect(thread.up).toBe(false);
  });
});

describe('ThreadPool', () => {
  const MINUTE = 60_000;
  const counter = () => new Int32Array(new SharedArrayBuffer(4));

  it('runs one request at a time per thread, starting a thread only when all are busy', async () => {
    const pool = new ThreadPool<Request, unknown>(SCRIPT, { size: 2 });
    try {
      const first = await pool.run({ op: 'thread' }, MINUTE);
      expect(await pool.run({ op: 'thread' }, MINUTE)).toBe(first); // the free thread is used again
      const order: string[] = [];
      const run = (request: Request, name: string) =>
        pool.run(request, MINUTE).then((answer) => (order.push(name), answer));
      const answers = await Promise.all([
        run({ op: 'busy', ms: 2_000 }, 'busy'),
        run({ op: 'thread' }, 'second thread'),
        run({ op: 'echo', value: 'waited' }, 'third request'),
      ]);
      // Two threads: the second request ran beside the busy one; the third waited for a thread.
      expect(answers[1]).not.toBe(first);
      expect(order).toEqual(['second thread', 'third request', 'busy']);
      expect(answers[2]).toBe('waited');
    } finally {
      await pool.close();
    }
  });

  it('stops a thread past the time limit and starts another for the next request', async () => {
    const pool = new ThreadPool<Request, unknown>(SCRIPT, { size: 1 });
    try {
      const before = await pool.run({ op: 'thread' }, MINUTE);
      const started = performance.now();
      const late = pool.run({ op: 'busy', ms: 30_000 }, 200);
      const waiting = pool.run({ op: 'thread' }, MINUTE);
      await expect(late).rejects.toBeInstanceOf(ThreadTimeoutError);
      expect(performance.now() - started).toBeLessThan(5_000); // not the 30 s the thread was given
      expect(await waiting).not.toBe(before);
    } finally {
      await pool.close();
    }
  });

  it('counts a request’s run against its time limit, not its thread’s start', async () => {
    const starts = counter();
    const pool = new ThreadPool<Request, unknown>(SCRIPT, { size: 1, workerData: { starts, startMs: 500 } });
    try {
      expect(await pool.run({ op: 'echo', value: 1 }, 200)).toBe(1);
      await expect(pool.run({ op: 'busy', ms: 30_000 }, 200)).rejects.toBeInstanceOf(ThreadTimeoutError);
      expect(await pool.run({ op: 'echo', value: 2 }, 200)).toBe(2); // in a new thread, as slow to start
      expect(Atomics.load(starts, 0)).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it('fails a request whose thread cannot start with ThreadStartError, and starts one for the next', async () => {
    const refuse = counter();
    Atomics.store(refuse, 0, 1);
    const pool = new ThreadPool<Request, unknown>(SCRIPT, { size: 1, workerData: { refuse } });
    const slow = new ThreadPool<Request, unknown>(SCRIPT, {
      size: 1,
      workerData: { startMs: 5_000 },
      startTimeoutMs: 200,
    });
    try {
      await expect(pool.run({ op: 'echo', value: 1 }, MINUTE)).rejects.toMatchObject({
        name: 'ThreadStartError',
        message: 'a worker thread could not start: cannot load',
      });
      Atomics.store(refuse, 0, 0);
      expect(await pool.run({ op: 'echo', value: 2 }, MINUTE)).toBe(2);
      await expect(slow.run({ op: 'echo', value: 3 }, MINUTE)).rejects.toMatchObject({
        name: 'ThreadStartError',
        message: 'a worker thread could not start: a worker thread did not start within 200 ms',
      });
    } finally {
      await Promise.all([pool.close(), slow.close()]);
    }
  });

  it('goes on with a new thread after one ran out of its heap', async () => {
    const failures: Error[] = [];
    const pool = new ThreadPool<Request, unknown>(SCRIPT, {
      size: 1,
      resourceLimits: { maxOldGenerationSizeMb: 32 },
      onFailure: (error) => failures.push(error),
    });
    try {
      const before = await pool.run({ op: 'thread' }, MINUTE);
      await expect(pool.run({ op: 'alloc' }, MINUTE)).rejects.toMatchObject({
        code: 'ERR_WORKER_OUT_OF_MEMORY',
      });
      expect(failures.map((error) => (error as { code?: string }).code)).toEqual([
        'ERR_WORKER_OUT_OF_MEMORY',
      ]);
      expect(await pool.run({ op: 'thread' }, MINUTE)).not.toBe(before);
    } finally {
      await pool.close();
    }
  });

  it('on closing, refuses the requests waiting and later ones, and lets the one under way finish', async () => {
    const busy = counter();
    const pool = new ThreadPool<Request, unknown>(SCRIPT, { size: 1, workerData: { busy } });
    const running = pool.run({ op: 'busy', ms: 300 }, MINUTE);
    await until(() => Atomics.load(busy, 0) === 1); // the request is running in the thread
    const waiting = pool.run({ op: 'echo', value: 1 }, MINUTE);
    const closed = pool.close();
    await expect(waiting).rejects.toThrow('the thread pool was closed');
    await expect(pool.run({ op: 'echo', value: 2 }, MINUTE)).rejects.toThrow('the thread pool was closed');
    expect(await running).toBe('done');
    await closed;
  });
});
