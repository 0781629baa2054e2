"""The encoder's search for the file of a picture: the analysis that computes the latents
(:mod:`.analysis`), the quantisation step that meets a rate (:mod:`.ratecontrol`), the filters'
least squares (:mod:`.filters`), the synthesis MLP's training (:mod:`.synthesis`), and the
candidates and the cheapest of them (:mod:`.encoder`)."""
