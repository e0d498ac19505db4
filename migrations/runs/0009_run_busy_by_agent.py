"""A partial index of the runs queued or running, by agent: the fair-share count of a run's tenant
(runs/fairness.py) reads a few entries through the tenant's agents instead of probing every
session the tenant ever had."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0002_memoryfile_skill'),
        ('runs', '0008_message_content_tokens'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='run',
            index=models.Index(condition=models.Q(('status__in', ('queued', 'running'))), fields=['agent'], name='run_busy_by_agent'),
        ),
    ]
