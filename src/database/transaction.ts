import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';

/**
 * A unit of work that repositories take as their first argument when they write inside one. Services
 * pass it along without knowing what it is, so that they never depend on the ORM.
 */
export type Tx = EntityManager;

@Injectable()
export class TransactionRunner {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction('READ COMMITTED', work);
  }

  /** A transaction whose every statement reads one snapshot: a long read (an export) sees one state. */
  snapshot<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction('REPEATABLE READ', work);
  }
}
