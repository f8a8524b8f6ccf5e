# An agent whose tools ask shackle-run first (run it under shackle-run, or
# anywhere SHACKLE_SOCKET names an SDK socket).
import json
import shackle_sdk

client = shackle_sdk.connect(agent_id="example-agent", framework="plain-python")


@client.tool("web_search", cost=0.01, actual_cost=lambda result: result["cost_usd"])
def web_search(query):
    return {"hits": ["result for " + query], "cost_usd": 0.004}


print("search:", web_search("circuit breakers")["hits"][0])

with client.call("summarise", {"text": "a long page"}, estimated_cost_usd=0.02) as call:
    summary = "short"
    call.actual_cost_usd = 0.015

try:
    with client.call("forbidden", {"target": "prod"}):
        print("never printed: the tool does not run")
except shackle_sdk.Denied as denied:
    print("denied:", denied.code)

state = client.state()
print("spent:", state["budget_spent_usd"], "calls:", state["total_calls"])
client.close()
