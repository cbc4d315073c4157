"""An OpenAI-compatible chat endpoint (`openai_client`) and what of the model's context a prompt's
passages may use (`budget`): what the model engines (forum_atlas.llm) and the model support verifier
(forum_atlas.entailment) share, beneath both."""
