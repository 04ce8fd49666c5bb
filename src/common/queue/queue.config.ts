import { type ConfigOf, int, section } from 'src/config/define.js';

export const queueSection = section('QUEUE_CONFIG', {
  title: 'Queues',
  variables: {
    /** A job whose worker stops renewing its lock for this long is taken back by the queue (Bull lockDuration). */
    lockSeconds: int('QUEUE_LOCK_SECONDS', {
      default: 30,
      min: 2,
      max: 3_600,
      description: 'a job whose worker stops renewing its lock this long goes to another worker',
    }),
  },
});

export const QUEUE_CONFIG = queueSection.token;
export type QueueConfig = ConfigOf<typeof queueSection>;
