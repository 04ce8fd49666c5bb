import { Module } from '@nestjs/common';
import { EventOutbox } from 'src/modules/events/domain-events.js';
import { OutboxRepository } from 'src/modules/events/outbox.repository.js';

/**
 * The outbox of the account's events (`events`): written by the changes that cause them, in their
 * transactions (`EventOutbox`), and read, marked and purged by webhook delivery (`OutboxRepository`).
 */
@Module({ providers: [EventOutbox, OutboxRepository], exports: [EventOutbox, OutboxRepository] })
export class EventsModule {}
