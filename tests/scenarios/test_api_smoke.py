"""The API smoke test: an agent made through the API is listed."""


def test_create_and_list_agent(alice, make_agent):
    agent = make_agent(alice)
    response = alice.client.get("/v1/agents")
    assert response.status_code == 200
    assert [a["id"] for a in response.json()["results"]] == [agent["id"]]
