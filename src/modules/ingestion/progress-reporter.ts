import type { Logger } from 'pino';
import type { ProcessingStage } from 'src/modules/documents/document.entity.js';
import type { Run } from 'src/modules/documents/documents.repository.js';
import { MicroBatcher } from 'src/modules/embeddings/micro-batcher.js';

export type ProgressUpdate = Run & { stage: ProcessingStage; percent: number };

/** Progress updates one statement writes at most. */
const WRITE_BATCH = 500;

interface RunState {
  writtenAt: number;
  pending: ProgressUpdate | null;
  timer: NodeJS.Timeout | null;
}

/**
 * Writes the runs' progress (stage and heartbeat) at most once per `intervalMs` a run, and not before
 * a run has lasted that long: a stage reached sooner after the run's start or its last write waits for
 * the end of the interval, in the background, and is dropped if a later stage or the run's end comes
 * first; a stage reached later is written at once, and awaited, as is one reported `now` (indexing,
 * which can wait with the document's row locked). A document that takes a fraction of a second costs
 * one write of progress, and what get-document shows is never more than `intervalMs`
 * behind. Writes of concurrent runs go together, a statement a dataset.
 */
export class ProgressReporter {
  private readonly runs = new Map<string, RunState>();
  private readonly writes: MicroBatcher<ProgressUpdate, void>;

  constructor(
    write: (updates: ProgressUpdate[]) => Promise<void>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {
    this.writes = new MicroBatcher(
      async (updates) => {
        await write(updates);
        return updates.map(() => undefined);
      },
      { maxItems: WRITE_BATCH },
    );
  }

  /** `now`: written at once whatever the interval, for a stage that may wait long to end. */
  async report(update: ProgressUpdate, { now: immediately = false } = {}): Promise<void> {
    const key = keyOf(update);
    const now = performance.now();
    // A run starts as if just written: its upload showed it queued.
    let state = this.runs.get(key);
    if (!state) this.runs.set(key, (state = { writtenAt: now, pending: null, timer: null }));
    if (immediately || now - state.writtenAt >= this.intervalMs) {
      if (state.timer) clearTimeout(state.timer);
      Object.assign(state, { writtenAt: now, pending: null, timer: null });
      await this.writes.submit([update]);
      return;
    }
    state.pending = update;
    state.timer ??= setTimeout(() => this.flush(key), this.intervalMs - (now - state.writtenAt)).unref();
  }

  /** The run has ended (or stopped): what it has not written yet is dropped. */
  end(run: Run): void {
    const key = keyOf(run);
    const state = this.runs.get(key);
    if (state?.timer) clearTimeout(state.timer);
    this.runs.delete(key);
  }

  private flush(key: string): void {
    const state = this.runs.get(key);
    if (!state?.pending) return;
    const update = state.pending;
    Object.assign(state, { writtenAt: performance.now(), pending: null, timer: null });
    // Nothing waits for it: a failed write leaves the last one shown, and the next report writes again.
    this.writes.submit([update]).catch((err: unknown) => {
      this.logger.warn({ err, document_id: update.documentId }, 'could not record a run’s progress');
    });
  }
}

function keyOf(run: Run): string {
  return `${run.documentId}.${run.generation}`;
}
