import { EventEmitter } from 'node:events';
import { Global, Inject, Injectable, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';

export interface ProcessingErrorPayload {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** The contract's events (Events section) and the fields of their `data`. */
export interface DomainEventMap {
  'document.uploaded': {
    document_id: string;
    dataset_id: string;
    filename: string | null;
    size_bytes: number;
    status: 'processing';
    metadata: Record<string, unknown>;
  };
  'document.processed': {
    document_id: string;
    dataset_id: string;
    chunks_created: number;
    processing_time_ms: number;
    status: 'ready';
    embedding_model: string | null;
  };
  'document.processing_failed': { document_id: string; dataset_id: string; error: ProcessingErrorPayload };
  'document.deleted': { document_id: string; dataset_id: string; deleted_by: string };
}

export type DomainEventName = keyof DomainEventMap;

/**
 * The in-process event bus: services announce what happened, subscribers (webhook delivery, later)
 * react. A failing subscriber is logged and never fails the operation that emitted the event.
 */
@Injectable()
export class DomainEvents {
  private readonly emitter = new EventEmitter();

  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  emit<K extends DomainEventName>(name: K, data: DomainEventMap[K]): void {
    try {
      this.emitter.emit(name, { event: name, timestamp: new Date().toISOString(), data });
    } catch (err) {
      this.logger.error({ err, event: name }, 'domain event subscriber failed');
    }
  }

  on<K extends DomainEventName>(
    name: K,
    listener: (event: { event: K; timestamp: string; data: DomainEventMap[K] }) => void | Promise<void>,
  ): void {
    this.emitter.on(name, (event: { event: K; timestamp: string; data: DomainEventMap[K] }) => {
      Promise.resolve(listener(event)).catch((err: unknown) =>
        this.logger.error({ err, event: name }, 'domain event subscriber failed'),
      );
    });
  }
}

@Global()
@Module({ providers: [DomainEvents], exports: [DomainEvents] })
export class EventsModule {}
