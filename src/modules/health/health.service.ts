import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';

export type CheckResult = { status: 'ok' } | { status: 'error'; error: string };

export interface Readiness {
  ready: boolean;
  checks: Record<string, CheckResult>;
}

const CHECK_TIMEOUT_MS = 2_000;

async function check(probe: () => Promise<unknown>): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([probe(), timeout]);
    return { status: 'ok' };
  } catch (error) {
    return { status: 'error', error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

@Injectable()
export class HealthService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  async readiness(): Promise<Readiness> {
    const [postgres, redis] = await Promise.all([
      check(() => this.db.query('SELECT 1')),
      check(() => this.redis.ping()),
    ]);
    return { ready: postgres.status === 'ok' && redis.status === 'ok', checks: { postgres, redis } };
  }
}
