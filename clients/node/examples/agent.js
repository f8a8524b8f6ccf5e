// An agent whose tools ask shackle-run first (run it under shackle-run, or
// anywhere SHACKLE_SOCKET names an SDK socket).
'use strict';
const shackle = require('shackle-sdk');

(async () => {
  const client = await shackle.connect({ agentId: 'example-agent', framework: 'plain-node' });

  const webSearch = client.guard('web_search', async ({ query }) => ({ hits: ['result for ' + query], costUsd: 0.004 }),
    { cost: 0.01, actualCost: (result) => result.costUsd });
  console.log('search:', (await webSearch({ query: 'circuit breakers' })).hits[0]);

  await client.withCall('summarise', { text: 'a long page' }, { estimatedCostUsd: 0.02 }, async (call) => {
    call.actualCostUsd = 0.015;
  });

  try {
    await client.withCall('forbidden', { target: 'prod' }, {}, async () => console.log('never printed'));
  } catch (e) {
    if (!(e instanceof shackle.Denied)) throw e;
    console.log('denied:', e.code);
  }

  const state = await client.state();
  console.log('spent:', state.budget_spent_usd, 'calls:', state.total_calls);
  client.close();
})().catch((e) => { console.error('agent:', e.message); process.exit(1); });
