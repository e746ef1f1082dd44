// Virtual cards.
