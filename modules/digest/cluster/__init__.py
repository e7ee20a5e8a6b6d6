"""Topic clustering (seed 002 step 5), pure: TF-IDF, DBSCAN or agglomerative, labels, leads, trends."""
