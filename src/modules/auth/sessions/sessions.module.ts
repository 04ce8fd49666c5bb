import { Module } from '@nestjs/common';
import { SessionsController } from 'src/modules/auth/sessions/sessions.controller.js';
import { SessionsService } from 'src/modules/auth/sessions/sessions.service.js';
import { SignInThrottle } from 'src/modules/auth/sessions/sign-in-throttle.js';
import { SessionStoreModule } from 'src/modules/auth/sessions/store/session-store.module.js';
import { UsersModule } from 'src/modules/auth/users/users.module.js';

/** The Session tier: signing in and out, and the cookie's check on every request (AuthenticationGuard). */
@Module({
  imports: [UsersModule, SessionStoreModule],
  controllers: [SessionsController],
  providers: [SessionsService, SignInThrottle],
  exports: [SessionsService],
})
export class SessionsModule {}
