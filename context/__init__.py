"""Context overrides, the data: the ``ContextOverride`` model, the store a run reads them
through and their gauge. Below ``runs``, which applies them; the inspector (``inspector``),
above ``runs``, shows and writes them."""
