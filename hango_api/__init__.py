"""The HTTP API's shared toolkit: what every app's views and serializers build on — list views
and their cursor pages, strict body fields, query parameters, the JSON parser, content
negotiation and the OpenAPI schema's additions. Below every app; it knows no app's models."""
