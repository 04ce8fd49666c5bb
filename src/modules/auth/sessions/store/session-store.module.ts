import { Module } from '@nestjs/common';
import { SessionStore } from 'src/modules/auth/sessions/store/session-store.js';

/**
 * The sessions in Redis: for the Session tier, which starts, reads and ends them, and for the users
 * module, which ends a person's sessions when they are disabled or change their password.
 */
@Module({ providers: [SessionStore], exports: [SessionStore] })
export class SessionStoreModule {}
