import { RequestGate } from 'src/modules/embeddings/request-gate.js';

describe('RequestGate', () => {
  it('lets up to its most requests in at once, the next when one leaves', async () => {
    const gate = new RequestGate(2);
    await gate.enter();
    await gate.enter();
    let third = false;
    const waiting = gate.enter().then(() => (third = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(third).toBe(false);
    gate.leave();
    await waiting;
    expect(gate.state()).toEqual({ active: 2, allowed: 2 });
  });

  it('holds every request for a 429’s pause, then lets half as many in, growing back with successes', async () => {
    const gate = new RequestGate(4);
    expect(gate.limited(200)).toBe(true);
    expect(gate.limited(100)).toBe(false); // within the pause already started
    const started = Date.now();
    await gate.enter();
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(gate.state()).toEqual({ active: 1, allowed: 1 });
    gate.succeeded();
    gate.succeeded();
    gate.succeeded();
    gate.succeeded();
    expect(gate.state().allowed).toBe(4);
  });
});
