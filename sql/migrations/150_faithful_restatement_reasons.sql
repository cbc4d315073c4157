-- Issue 35: the audit's new reasons for taking a [SOURCED] tag away (grounding-v2,
-- atlas.deliberation.faithful; atlas.deliberation.model.FailedCheck).
ALTER TABLE forum.brief_claims DROP CONSTRAINT brief_claims_failed_check;
ALTER TABLE forum.brief_claims ADD CONSTRAINT brief_claims_failed_check CHECK (failed IN (
  'no_quote', 'unknown_source', 'not_retrieved', 'quote_not_verbatim', 'contradicts', 'contextual',
  'unsafe_text', 'quote_uninformative', 'claim_not_covered', 'direction_clash', 'negation_clash',
  'not_in_findings',
  'order_changed', 'clauses_spliced', 'number_rebound', 'unit_changed', 'comparison_reversed', 'frame_dropped',
  'modality_dropped', 'quantifier_changed', 'polarity_clash', 'not_verifiable'));
