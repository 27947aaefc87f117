-- What a run cost: the input tokens read from the provider's prompt cache, and the cost in US
-- dollars at the models' prices (NULL when no call of the run had a priced model).
ALTER TABLE runs ADD COLUMN cached_prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_usd REAL;
