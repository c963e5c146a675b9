import trio

from presa_trio.http import serve_http
from presa_trio.server import RequestContext, Server
from presa_trio.wire.mrtr import Elicitation, InputRequired, Sampling

server = Server("two-rounds", "1.0.0")
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ASK_CITY = Elicitation("Which city?", CITY)


@server.tool(needs=["elicitation", "sampling"])
async def city_fact(ctx: RequestContext) -> str | InputRequired:
    """Asks the user for a city, then the client's model for a fact."""
    city = ctx.state["city"] if ctx.state else None  # verified state of an earlier round
    if city is None:
        answer = ctx.elicitation("city")  # this round's answer, if the client sent one
        if answer is not None and answer.action != "accept":
            return "No city, no fact."
        # The content is the client's: a form it did not fill in is asked again.
        city = (answer.content or {}).get("city") if answer else None
        if not isinstance(city, str):
            return InputRequired({"city": ASK_CITY})
    fact = ctx.sampling("fact")
    if fact is None:  # round 2: ask the model; the signed state carries the city
        ask = Sampling(f"Tell me one fact about {city}.", max_tokens=60)
        return InputRequired({"fact": ask}, state={"city": city})
    return f"{city}: {fact.text}"


if __name__ == "__main__":
    trio.run(serve_http, server)
