"""cg.utils.data: datasets, samplers and the DataLoader that batches them, as torch.utils.data."""
from .dataloader import DataLoader, default_collate
from .dataset import (ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler)

__all__ = ["DataLoader", "default_collate", "Dataset", "IterableDataset", "TensorDataset",
           "ConcatDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DistributedSampler"]
