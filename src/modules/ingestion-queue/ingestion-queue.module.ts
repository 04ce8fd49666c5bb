import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { BullRootModule } from 'src/common/queue/bull-root.module.js';
import { IngestionQueue, QueueName } from 'src/modules/ingestion-queue/ingestion.queue.js';

const ingestionQueue = BullModule.registerQueue({ name: QueueName.Ingestion });

/**
 * The ingestion queue (Bull, in Redis): `IngestionQueue` for whoever queues documents, and the Bull
 * queue itself for its processor. A static module, so that all who import it share one queue.
 */
@Module({
  imports: [BullRootModule, ingestionQueue],
  providers: [IngestionQueue],
  exports: [IngestionQueue, ingestionQueue],
})
export class IngestionQueueModule {}
