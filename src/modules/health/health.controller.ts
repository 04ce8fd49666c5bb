import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from 'src/modules/auth/auth.decorators.js';
import { NotReadyDto, ReadinessDto } from 'src/modules/health/dto/readiness.dto.js';
import { HealthService } from 'src/modules/health/health.service.js';

@ApiTags('health')
@Controller()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get('health')
  @Public({ limit: 'none' })
  @ApiOperation({ operationId: 'getHealth', summary: 'Liveness: the process is up' })
  @ApiOkResponse({ schema: { type: 'object', properties: { status: { type: 'string', example: 'ok' } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @Public({ limit: 'none' })
  @ApiOperation({ operationId: 'getReadiness', summary: 'Readiness: PostgreSQL and Redis answer' })
  @ApiOkResponse({ type: ReadinessDto })
  @ApiServiceUnavailableResponse({ description: 'A dependency does not answer', type: NotReadyDto })
  async ready(@Res({ passthrough: true }) response: Response): Promise<ReadinessDto | NotReadyDto> {
    const readiness = await this.health.readiness();
    if (readiness.ready) return { status: 'ready', checks: readiness.checks, search: readiness.search };
    response.status(503);
    return {
      error: 'Not ready',
      code: 'not_ready',
      details: { checks: readiness.checks, search: readiness.search },
    };
  }
}
